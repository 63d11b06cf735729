"""The memory commands of `hms`: remember, recall (time travel, explain), explain, history,
forget, load (progress bar on a terminal only), compact, --key-env; exit codes and --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ptyrun import run_on_pty

from hmsengine.cli import main
from hmsengine.cli_load import SEARCH_HINT

PARIS = ["remember", "Alice lives in Paris", "--id", "paris", "--subject", "alice/city",
         "--valid-from", "2020-01-01T00:00:00Z", "--entity", "alice"]
BERLIN = ["remember", "Alice lives in Berlin", "--id", "berlin", "--subject", "alice/city",
          "--valid-from", "1735689600000", "--supersedes", "paris", "--metadata", '{"src": "chat"}']


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.fixture
def store(tmp_path, capsys):
    s = str(tmp_path / "s")
    assert main([*PARIS, "--store", s]) == 0
    assert main([*BERLIN, "--store", s, "--json"]) == 0
    assert _json(capsys) == {"id": "berlin", "created": True, "superseded": ["paris"]}
    return s


def test_remember_and_recall_now_and_as_of(store, capsys):
    """recall shows the current fact; --as-of a past moment shows the superseded one."""
    assert main(["recall", "Alice lives", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "berlin" in out and "current" in out and "paris" not in out
    assert main(["recall", "Alice lives", "--as-of", "2022-06-01T00:00:00+02:00", "--json",
                 "--store", store]) == 0
    hits = _json(capsys)["hits"]
    assert [h["fact"]["id"] for h in hits] == ["paris"] and hits[0]["status"] == "current"
    assert main(["recall", "Alice", "--history", "all", "--k", "5", "--subject", "alice/city",
                 "--kind", "fact", "--explain", "--json", "--store", store]) == 0
    hits = _json(capsys)["hits"]
    assert {h["fact"]["id"]: h["status"] for h in hits} == {"paris": "superseded", "berlin": "current"}
    assert all(h["explanation"]["matched_terms"] for h in hits)
    assert main(["recall", "Alice lives", "--explain", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "berlin came back at rank 1" in out and "matched terms: alic, live" in out
    assert main(["recall", "Alice", "--known-at", "0", "--json", "--store", store]) == 0
    assert _json(capsys)["hits"] == []


def test_explain_and_history(store, capsys):
    assert main(["explain", "Alice lives", "paris", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "paris did not come back" in out and "superseded" in out
    assert main(["explain", "Alice lives", "berlin", "--json", "--store", store]) == 0
    e = _json(capsys)
    assert e["id"] == "berlin" and e["rank"] == 1 and e["status"] == "current"
    assert main(["history", "berlin", "--json", "--store", store]) == 0
    assert [f["id"] for f in _json(capsys)["facts"]] == ["paris", "berlin"]
    assert main(["history", "berlin", "--store", store]) == 0
    assert "Alice lives in Paris" in capsys.readouterr().out


def test_forget_scopes_dry_run_and_purge(store, capsys):
    assert main(["forget", "--entity", "alice", "--dry-run", "--json", "--store", store]) == 0
    report = _json(capsys)
    assert report["removed"] == ["paris"] and report["dry_run"] is True
    assert main(["history", "paris", "--store", store]) == 0  # a dry run changes nothing
    assert main(["forget", "--metadata", '{"src": "chat"}', "--include-chain", "--json",
                 "--store", store]) == 0
    assert sorted(_json(capsys)["removed"]) == ["berlin", "paris"]
    assert main(["remember", "x", "--id", "x", "--store", store]) == 0
    assert main(["forget", "--ingested-before", "9999999999999", "--purge", "--store", store]) == 0
    assert "forgot 1 fact(s): x (purged)" in capsys.readouterr().out
    assert main(["compact", "--purge", "--json", "--store", store]) == 0
    assert _json(capsys)["purged"] is True


def test_exit_codes_and_errors(store, capsys):
    """not found 1, bad input 2 (naive time, bad JSON, two scopes, no scope), conflict 3;
    each printed with its code and hint, never a traceback."""
    assert main(["history", "nobody", "--store", store]) == 1
    assert "error [not_found]" in capsys.readouterr().err
    for argv in (["recall", "x", "--as-of", "2022-01-01T00:00:00"],
                 ["recall", "x", "--as-of", "yesterday"],
                 ["remember", "y", "--metadata", "[1]"],
                 ["forget", "--subject", "a", "--entity", "b"],
                 ["forget"],
                 ["recall", "x", "--k", "0"]):
        assert main([*argv, "--store", store]) == 2, argv
        err = capsys.readouterr().err
        assert "Traceback" not in err
    assert main(["recall", "x", "--as-of", "2022-01-01T00:00:00", "--store", store]) == 2
    err = capsys.readouterr().err
    assert "error [invalid_request]: as_of" in err and "hint:" in err
    assert main(["remember", "another text", "--id", "paris", "--store", store]) == 3
    assert "error [conflict]" in capsys.readouterr().err
    assert main(["remember", "another text", "--id", "paris", "--json", "--store", store]) == 3
    assert json.loads(capsys.readouterr().err)["error"]["code"] == "conflict"


def test_key_env(tmp_path, capsys, monkeypatch):
    """--key-env reads the key from the environment; a missing variable is bad input; the
    store then needs the key."""
    store = str(tmp_path / "enc")
    monkeypatch.setenv("HMS_TEST_KEY", "a passphrase for the test")
    assert main(["remember", "secret fact", "--id", "s", "--key-env", "HMS_TEST_KEY", "--store", store]) == 0
    assert main(["history", "s", "--key-env", "HMS_TEST_KEY", "--store", store, "--json"]) == 0
    assert _json(capsys)["facts"][0]["text"] == "secret fact"
    assert main(["history", "s", "--key-env", "HMS_NO_SUCH_VAR", "--store", store]) == 2
    assert "HMS_NO_SUCH_VAR" in capsys.readouterr().err
    assert main(["history", "s", "--store", store]) != 0


def _markdown_files(tmp_path, n=100):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(n):
        (docs / f"note{i:03}.md").write_text(f"# Note {i}\n\nParagraph about topic {i}.\n")
    return docs


def test_load_json(tmp_path, capsys):
    """load with a glob, --json: one JSON line, nothing else on stdout."""
    docs = _markdown_files(tmp_path, 5)
    store = str(tmp_path / "s")
    assert main(["load", str(docs / "*.md"), "--json", "--store", store]) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1
    loaded = json.loads(out)["documents"]
    assert [d["document"] for d in loaded] == [f"note{i:03}" for i in range(5)]
    assert all(d["episodes"] for d in loaded)
    assert main(["load", str(tmp_path / "nothing*.md"), "--store", store]) == 2


def test_load_100_files_progress_bar_on_pty_only(tmp_path):
    """On a pseudo-terminal `hms load` draws a progress bar; with --json (still on the pty) or
    with stdout a pipe, it prints only its result."""
    docs = _markdown_files(tmp_path)
    rc, out = run_on_pty(["load", str(docs / "*.md"), "--store", str(tmp_path / "a")])
    assert rc == 0, out
    assert b"loading" in out and b"100%" in out and "━".encode() in out
    assert b"loaded 100 file(s): 100 new, 0 changed, 0 unchanged, 0 removed" in out
    rc, out = run_on_pty(["load", str(docs / "*.md"), "--json", "--store", str(tmp_path / "b")])
    assert rc == 0, out
    assert b"loading" not in out and b"\x1b[" not in out
    assert len(json.loads(out)["documents"]) == 100
    piped = subprocess.run([sys.executable, "-m", "hmsengine.cli", "load", str(docs / "*.md"),
                            "--store", str(tmp_path / "c")], capture_output=True, check=True)
    assert piped.stdout.decode().strip().splitlines() == [
        "loaded 100 file(s): 100 new, 0 changed, 0 unchanged, 0 removed; 100 episode(s), 0 fact(s)",
        SEARCH_HINT]


def test_as_a_process_exit_codes_without_traceback(tmp_path):
    """As a real process: remember and recall --json, then not found (1), a naive time (2) and
    a conflict (3), each with its code on stderr and no traceback."""
    def hms(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hmsengine.cli", *argv],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "HMS_STORE": str(tmp_path / "s")})

    assert hms("remember", "Alice lives in Paris", "--id", "paris").returncode == 0
    done = hms("recall", "Alice", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["hits"][0]["fact"]["id"] == "paris"
    for argv, code, name in ((["history", "nobody"], 1, "not_found"),
                             (["recall", "x", "--as-of", "2024-05-01T10:00"], 2, "invalid_request"),
                             (["remember", "other", "--id", "paris"], 3, "conflict")):
        done = hms(*argv)
        assert done.returncode == code, (argv, done.stderr)
        assert f"error [{name}]" in done.stderr and "Traceback" not in done.stderr
