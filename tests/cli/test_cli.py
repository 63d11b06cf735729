"""The `hms` command: real store, exit codes, JSON output, errors with code and hint."""

from __future__ import annotations

import json
import subprocess
import sys

from hmsengine.cli import main


def test_put_get_delete_stats(tmp_path, capsys):
    """put, get, delete and stats work on a real store and report as documented."""
    store = str(tmp_path / "s")
    assert main(["put", "a", "hello there", "--metadata", '{"k": 1}', "--store", store]) == 0
    assert main(["--store", store, "--json", "get", "a"]) == 0
    out = capsys.readouterr().out.strip().splitlines()[-1]
    fact = json.loads(out)  # a document written with put reads as a plain fact
    assert {k: fact[k] for k in ("id", "text", "metadata", "embedding", "kind", "subject", "file")} == {
        "id": "a", "text": "hello there", "metadata": {"k": 1}, "embedding": None, "kind": "fact",
        "subject": None, "file": None}
    assert main(["stats", "--store", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 1
    assert main(["delete", "a", "--store", store]) == 0
    assert main(["get", "a", "--store", store]) == 1
    err = capsys.readouterr().err
    assert "error [not_found]" in err


def test_bad_input_exit_code_and_message(tmp_path, capsys):
    """Bad input exits 2 and prints the error code and the field; no traceback."""
    store = str(tmp_path / "s")
    assert main(["put", "a", "t", "--metadata", "[1]", "--store", store]) == 2
    err = capsys.readouterr().err
    assert "error [invalid_request]: metadata" in err and "Traceback" not in err
    assert main(["nonsense-command"]) == 2


def test_locked_store_exit_code(tmp_path, capsys):
    """A store problem (here: locked by another open) exits 4 with the store_locked code."""
    import trio

    from hmsengine import Engine

    store = str(tmp_path / "s")

    async def hold():
        async with Engine.open(store):
            return await trio.to_thread.run_sync(main, ["stats", "--store", store])

    assert trio.run(hold) == 4
    assert "store_locked" in capsys.readouterr().err


def test_console_script_runs(tmp_path):
    """The installed entry point runs as a real process (python -m hmsengine.cli)."""
    out = subprocess.run([sys.executable, "-m", "hmsengine.cli", "--store", str(tmp_path / "s"),
                          "put", "x", "-"], input=b"from stdin", capture_output=True, check=True)
    assert b"created x" in out.stdout
