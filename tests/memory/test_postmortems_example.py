"""The post-mortem example (examples/postmortems): loading the post-mortems dated before an
incident and recalling with its alert title as_of its start names a prior incident of the same
class; as_of before a prior incident, the recall cannot name it."""

from __future__ import annotations

import datetime as dt
import importlib
import re
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "postmortems"
TARGET_CLASS = "node group cannot grow"


@pytest.fixture
def replay(monkeypatch):
    """The example's replay module, imported from its directory."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    return importlib.import_module("replay_incident")


def named_incidents(hits) -> set[str]:
    """Dates of the prior incidents of the target class that the hits name."""
    return {h.fact.metadata["incident"] for h in hits
            if h.fact.metadata and h.fact.metadata.get("class") == TARGET_CLASS
            and h.fact.metadata["incident"] in h.fact.text}


async def test_recall_at_incident_start_names_a_prior_incident_of_the_class(replay):
    """At the incident start the top 3 name a prior incident of the same class, by date and title,
    and nothing from the post-mortem written after the incident."""
    hits, profile = await replay.replay()
    assert len(hits) == 3
    named = named_incidents(hits)
    assert named and named <= {"2023-08-02", "2024-02-07"}
    assert any(h.fact.metadata["title"] in h.fact.text for h in hits if h.fact.metadata)
    assert all(h.fact.kind != "episode" for h in hits)
    assert "2025-01-10" not in profile.block and "Ledger worker" not in profile.block
    assert profile.counts["fact"] == 6  # one fact per post-mortem loaded, episodes not counted


async def test_recall_before_a_prior_incident_cannot_name_it(replay):
    """as_of before a named prior incident, the top 3 leave it out; before both, no incident of
    the class comes back at all."""
    hits, _ = await replay.replay()
    for date in named_incidents(hits):
        before = dt.datetime.fromisoformat(date).replace(tzinfo=dt.UTC) - dt.timedelta(days=1)
        earlier, _ = await replay.replay(as_of=before)
        assert date not in named_incidents(earlier)
        assert all(h.fact.valid_from is None or h.fact.valid_from <= before.timestamp() * 1000
                   for h in earlier)
    first, _ = await replay.replay(as_of=dt.datetime(2023, 8, 1, tzinfo=dt.UTC))
    assert named_incidents(first) == set()


def test_loader_leaves_out_post_mortems_dated_after_the_incident(replay):
    """Only post-mortems dated before the incident start are loaded."""
    loaded = [path.name for _, path in replay.postmortems(replay.INCIDENT_START)]
    assert len(loaded) == 6 and all(name < "2024-10-21" for name in loaded)
    every = sorted(p.name for p in (EXAMPLE / "data").glob("*.md"))
    assert set(every) - set(loaded) == {"2025-01-10-ledger-pending.md"}


def test_every_post_mortem_names_a_date_a_class_and_a_cause():
    """Each post-mortem is dated and names its failure class and a specific cause."""
    for path in sorted((EXAMPLE / "data").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        assert re.match(rf"# {path.name[:10]}: ", text)
        assert "\n- Failure class: " in text and "\n- Specific cause: " in text


def test_script_runs(replay, capsys):
    """The script's main prints the alert, the top 3 and the profile block, and exits 0."""
    assert replay.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"alert: {replay.INCIDENT_TITLE}\n") and "counts: fact 6" in out
