"""``HMS_MEMORY_CONFIG``: ``hms serve`` takes its memory configuration from the environment (a
path or inline JSON) when ``--memory-config`` is absent, checked at start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from serverproc import ServerProcess, write_json

from hmsengine.client import Client

LATEST = {"supersession": "latest-by-subject"}


def _serve_env(value: str | None, *args: str, root: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("HMS_MEMORY_CONFIG", None)
    if value is not None:
        env["HMS_MEMORY_CONFIG"] = value
    return subprocess.run([sys.executable, "-m", "hmsengine.cli", "serve", "--root", str(root),
                           "--port", "0", *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=env)


def _supersedes(url: str) -> tuple[str, ...]:
    with Client(url, tenant="t") as hms:
        hms.memory.remember("Alice lives in Berlin", id="a1", subject="alice/city", valid_from=1)
        return hms.memory.remember("Alice lives in Lisbon", id="a2", subject="alice/city",
                                   valid_from=2).superseded


@pytest.mark.parametrize("form", ["inline", "path"])
def test_the_environment_variable_configures_every_tenant(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          form: str) -> None:
    """HMS_MEMORY_CONFIG as inline JSON or as a path to a file: the server runs with it
    (latest-by-subject supersedes) and logs where its configuration came from."""
    value = json.dumps(LATEST) if form == "inline" else str(write_json(tmp_path / "c.json", LATEST))
    monkeypatch.setenv("HMS_MEMORY_CONFIG", value)
    proc = ServerProcess(tmp_path / "root")
    try:
        assert _supersedes(proc.url) == ("a1",)
    finally:
        assert proc.stop() == 0
    assert "memory configuration: HMS_MEMORY_CONFIG" in proc.stderr()


def test_the_option_wins_and_an_empty_variable_is_unset(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """--memory-config overrides HMS_MEMORY_CONFIG (even a broken one); an empty variable
    leaves the defaults (no supersession by subject)."""
    monkeypatch.setenv("HMS_MEMORY_CONFIG", "{broken")
    proc = ServerProcess(tmp_path / "root", "--memory-config",
                         str(write_json(tmp_path / "c.json", LATEST)))
    try:
        assert _supersedes(proc.url) == ("a1",)
    finally:
        assert proc.stop() == 0
    monkeypatch.setenv("HMS_MEMORY_CONFIG", "  ")
    proc = ServerProcess(tmp_path / "root2")
    try:
        assert _supersedes(proc.url) == ()
    finally:
        assert proc.stop() == 0
    assert "memory configuration: the defaults" in proc.stderr()


@pytest.mark.parametrize(("value", "message"), [
    ('{"supersession": "sometimes"}',
     "error [invalid_request]: HMS_MEMORY_CONFIG (inline JSON): config.supersession: expected one of"),
    ("{not json", "error [invalid_request]: HMS_MEMORY_CONFIG (inline JSON): not valid JSON"),
    ("/no/such/config.json",
     "error [invalid_request]: HMS_MEMORY_CONFIG /no/such/config.json: cannot read it"),
    ('{"recency": {"kind": "exponential"}}',
     "error [invalid_request]: HMS_MEMORY_CONFIG (inline JSON): config.recency.halfLifeMs"),
])
def test_a_bad_variable_stops_the_start_with_one_line(tmp_path: Path, value: str,
                                                      message: str) -> None:
    """A bad HMS_MEMORY_CONFIG stops start-up before binding: exit 2, one error line naming
    the variable and the field (then a hint line), nothing on standard output."""
    done = _serve_env(value, root=tmp_path / "root")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(message), lines
    assert len(lines) <= 2 and (len(lines) == 1 or lines[1].startswith("hint: "))
    assert done.stdout == "" and not (tmp_path / "root").exists()


def test_a_file_base_in_the_variable_is_checked_against_the_root(tmp_path: Path) -> None:
    """A fileBase overlapping --root from HMS_MEMORY_CONFIG is refused, naming the variable."""
    root = tmp_path / "root"
    done = _serve_env(json.dumps({"fileBase": str(tmp_path)}), root=root)
    assert done.returncode == 2
    assert done.stderr.startswith("error [invalid_request]: HMS_MEMORY_CONFIG (inline JSON): ")
