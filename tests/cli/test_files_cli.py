"""The file and portability commands of `hms`: remember-file, hydrate, inspect, export, import,
snapshot, restore and get; --json output, exit codes, progress only on a terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ptyrun import run_on_pty

from hmsengine.cli import main


def _json(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_bytes(b"id;name\n1;alice\n2;bob\n")
    return path


def test_remember_file_get_hydrate(tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "s")
    assert main(["remember-file", str(data), "--range", "8:8", "--format", "csv", "--summary",
                 "alice row", "--subject", "people", "--store", store, "--json"]) == 0
    result = _json(capsys)
    assert result["created"] is True
    assert main(["get", result["id"], "--store", store, "--json"]) == 0
    fact = _json(capsys)
    assert fact["text"] == "alice row" and fact["subject"] == "people"
    assert fact["file"]["offset"] == 8 and fact["file"]["length"] == 8 and fact["file"]["format"] == "csv"
    assert main(["hydrate", result["id"], "--store", store, "--output", str(tmp_path / "out.bin")]) == 0
    assert (tmp_path / "out.bin").read_bytes() == b"1;alice\n"
    assert main(["get", result["id"], "--store", store]) == 0
    assert "alice row" in capsys.readouterr().out
    data.write_bytes(b"id;name\n1;ALICE\n2;bob\n")
    assert main(["hydrate", result["id"], "--store", store]) == 4
    err = capsys.readouterr().err
    assert "error [provenance_error]" in err and "Traceback" not in err
    assert main(["remember-file", "https://example.com/x.csv", "--store", store]) == 2
    assert "not supported" in capsys.readouterr().err
    assert main(["remember-file", str(data), "--range", "oops", "--store", store]) == 2
    assert main(["hydrate", "no-such-fact", "--store", store]) == 1


def test_inspect_needs_no_store(tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["inspect", str(data), "--full", "--json"]) == 0
    result = _json(capsys)
    assert result["format"] == "csv" and result["row_count"] == 2
    assert result["metadata"]["delimiter"] == ";" and result["metadata"]["validation"] == "full"
    assert not (tmp_path / "hms-store").exists()  # no store was opened or created
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\nnot json\n')
    assert main(["inspect", str(tmp_path / "bad.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "line 2" in out
    assert main(["inspect", str(tmp_path / "missing.csv")]) == 2


def test_export_import_snapshot_restore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert main(["remember", "Alice lives in Paris", "--subject", "alice/city", "--store", a]) == 0
    assert main(["remember", "a secret to purge", "--id", "sec", "--store", a]) == 0
    capsys.readouterr()
    export = str(tmp_path / "a.jsonl.gz")
    assert main(["export", export, "--store", a, "--json"]) == 0
    assert _json(capsys) == {"path": export, "facts": 2, "documents": 0, "tombstones": 0}
    assert main(["import", export, "--store", b, "--json"]) == 0
    assert _json(capsys)["added"] == 2
    assert main(["import", export, "--store", b, "--json"]) == 0
    report = _json(capsys)
    assert (report["added"], report["skipped"]) == (0, 2)
    assert main(["forget", "--ids", "sec", "--purge", "--store", b]) == 0
    assert main(["import", export, "--store", b, "--json"]) == 0
    assert _json(capsys)["refused"] == ["sec"]
    snap = str(tmp_path / "snap")
    assert main(["snapshot", snap, "--store", a, "--json"]) == 0
    manifest = _json(capsys)
    assert manifest["format"] == "hmsengine-snapshot-v2" and len(manifest["snapshotId"]) == 64
    assert main(["restore", snap, "--store", str(tmp_path / "c"), "--json"]) == 0
    assert _json(capsys)["added"] == 2
    assert main(["snapshot", str(tmp_path / "hm"), "--format", "hotmem-v2", "--store", a]) == 0
    assert "hotmem-v2" in capsys.readouterr().out
    facts = Path(snap) / "facts.jsonl"
    facts.write_bytes(facts.read_bytes().replace(b"Paris", b"Rome!"))
    assert main(["restore", snap, "--store", str(tmp_path / "d")]) == 4
    err = capsys.readouterr().err
    assert "error [corrupt_store]" in err and "facts.jsonl" in err
    (tmp_path / "bad.jsonl").write_text('{"type":"fact","id":"x","ingestTime":1}\n')
    assert main(["import", str(tmp_path / "bad.jsonl"), "--store", b]) == 2
    assert "bad.jsonl:1: text: required" in capsys.readouterr().err


def test_import_progress_on_a_terminal_only(tmp_path: Path) -> None:
    lines = [json.dumps({"type": "fact", "id": f"f{i}", "text": f"fact number {i}", "ingestTime": i})
             for i in range(5000)]
    (tmp_path / "many.jsonl").write_text("\n".join(lines) + "\n")
    code, output = run_on_pty(["import", str(tmp_path / "many.jsonl"), "--store", str(tmp_path / "t")])
    assert code == 0, output
    assert b"importing" in output and b"imported 5000" in output
    piped = subprocess.run([sys.executable, "-m", "hmsengine.cli", "import", str(tmp_path / "many.jsonl"),
                            "--store", str(tmp_path / "u"), "--json"], capture_output=True, check=True)
    assert json.loads(piped.stdout)["added"] == 5000 and b"importing" not in piped.stdout
