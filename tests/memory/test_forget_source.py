"""``ForgetScope.source``: everything derived from one source, without knowing its ids.

A file (file-backed facts: path, ``file://`` URI, relative to the file base, through a symbolic
link), a loaded document (its episodes and the facts drawn from them, by name or by the path
``hms load`` named it after), a captured text (``capture(..., source=...)``), and whatever lists
a matched fact among its sources. Dry run lists first; JSON, the CLI and bad input too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hmsengine import Engine, ForgetScope, InvalidRequest, Memory, MemoryConfig, RememberInput
from hmsengine.cli import main


def _extractor(chunk: str, current: list) -> list[RememberInput]:
    """One fact per chunk that mentions a lighthouse."""
    if "lighthouse" not in chunk:
        return []
    return [RememberInput(text=f"the lighthouse keeper noted: {chunk[-30:]}", kind="fact")]


async def test_forget_by_file_source_in_every_spelling(tmp_path: Path) -> None:
    """A file's facts are found by its path, its file:// URI, a relative path under the file
    base and a symbolic link to it; other files' facts stay."""
    data = tmp_path / "data"
    data.mkdir()
    target, other = data / "ledger.csv", data / "other.csv"
    target.write_bytes(b"a,b\n1,2\n3,4\n")
    other.write_bytes(b"x\n1\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    async with Engine.open(None) as engine:
        memory = Memory(engine, MemoryConfig(file_base=str(tmp_path)))
        whole = await memory.remember_file(str(target), summary="the whole ledger")
        part = await memory.remember_file(target.as_uri(), byte_range=(4, 4), summary="row one")
        kept = await memory.remember_file(str(other), summary="another file")
        spellings = [str(target), target.as_uri(), "data/ledger.csv", str(link),
                     str(data / "sub" / ".." / "ledger.csv")]
        for spelling in spellings:
            report = await memory.forget(ForgetScope.source(spelling), dry_run=True)
            assert report.removed == tuple(sorted((whole.id, part.id))), spelling
        report = await memory.forget(ForgetScope.source(str(link)))
        assert set(report.removed) == {whole.id, part.id}
        assert await memory.get(kept.id) is not None
        assert (await memory.forget(ForgetScope.source(str(target)))).removed == ()


async def test_forget_a_loaded_document_and_what_was_drawn_from_it(tmp_path: Path) -> None:
    """The episodes of a loaded document and the facts extracted from them (and a fact that
    cites an extracted one) go by the document's name or the path ``hms load`` took it from."""
    text = "# Coast\n\nThe lighthouse at the cape.\n\n" + "Waves and rocks. " * 150 + \
        "\n\n## North\n\nA second lighthouse stands north.\n"
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        loaded = await memory.load("coast", text, extractor=_extractor)
        other = await memory.load("coast-2020", "# Other\n\nAnother lighthouse.\n",
                                  extractor=_extractor)
        cites = await memory.remember("a summary citing the keeper", sources=[loaded.facts[0]])
        plain = await memory.remember("nothing to do with the coast")
        assert len(loaded.episodes) >= 2 and loaded.facts
        expected = tuple(sorted({*loaded.episodes, *loaded.facts, cites.id}))
        for spelling in ("coast", "notes/coast.md", str(tmp_path / "coast.md")):
            report = await memory.forget(ForgetScope.source(spelling), dry_run=True)
            assert report.removed == expected, spelling
        report = await memory.forget(ForgetScope.source("coast"), purge=True)
        assert report.removed == expected
        for doc_id in (*other.episodes, *other.facts, plain.id):
            assert await memory.get(doc_id) is not None
        assert engine.tombstones().keys() >= set(expected)


async def test_forget_what_capture_drew_from_a_source() -> None:
    """``capture(..., source=...)`` records the source in each fact; forgetting it removes them."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        ids = await memory.capture("The lighthouse was painted red.\n\nNothing else.",
                                   extractor=_extractor, source="minutes-2024-05.txt")
        others = await memory.capture("A lighthouse elsewhere.", extractor=_extractor)
        assert ids and others
        fact = await memory.get(ids[0])
        assert fact is not None and fact.sources[-1] == "minutes-2024-05.txt"
        report = await memory.forget(ForgetScope.source("minutes-2024-05.txt"))
        assert report.removed == tuple(sorted(ids))
        assert await memory.get(others[0]) is not None
        with pytest.raises(InvalidRequest, match="source"):
            await memory.capture("x", extractor=_extractor, source="")


async def test_source_scope_over_json_and_bad_input() -> None:
    """``{"scope": {"source": ...}}`` in the JSON contract; an empty or non-string source is
    InvalidRequest."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        loaded = await memory.call("load", {"document": "faq", "text": "# FAQ\n\nQuestions.\n"})
        body = await memory.call("forget", {"scope": {"source": "faq"}, "dryRun": True})
        assert body["removed"] == loaded["episodes"] and body["dryRun"] is True
        body = await memory.call("forget", {"scope": {"source": "faq"}, "purge": True})
        assert body["removed"] == loaded["episodes"]
        for bad in ("", 5, None):
            with pytest.raises(InvalidRequest, match=r"scope\.source"):
                await memory.call("forget", {"scope": {"source": bad}})
        with pytest.raises(InvalidRequest, match=r"scope\.source"):
            ForgetScope.source("")


def test_cli_forget_source_after_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``hms load notes/guide.md`` then ``hms forget --source notes/guide.md``: dry run lists the
    episodes, the purge removes them, and ``hms check --absent`` proves their text gone."""
    store = str(tmp_path / "store")
    notes = tmp_path / "notes"
    notes.mkdir()
    guide = notes / "guide.md"
    guide.write_text("# Guide\n\nZQXGUIDE the secret paragraph of the guide.\n")
    assert main(["load", str(guide), "--store", store]) == 0
    capsys.readouterr()
    assert main(["forget", "--source", str(guide), "--dry-run", "--json", "--store", store]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["removed"] == ["guide-0001"] and listed["dry_run"] is True
    assert main(["check", "--store", store, "--absent", "ZQXGUIDE"]) == 1
    capsys.readouterr()
    assert main(["forget", "--source", os.path.relpath(guide), "--purge", "--store", store]) == 0
    assert "guide-0001" in capsys.readouterr().out
    assert main(["check", "--store", store, "--absent", "ZQXGUIDE", "--absent", "secret"]) == 0
