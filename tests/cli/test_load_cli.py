"""``hms load`` of directories (issue 23): recursive with ``--glob``, documents keyed by their path
relative to the loaded directory, true new/changed/unchanged/removed counts on a repeated load,
``--prune``, regular files only, and an episode text that writes each heading once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hmsengine.cli import main
from hmsengine.cli_load import SEARCH_HINT, document_name, pattern_regex


def _tree(root: Path) -> Path:
    notes = root / "notes"
    for rel, text in {"guide.md": "# Guide\n\nInstall with make install.\n",
                      "ops/guide.md": "# Ops guide\n\nRestart the pager service.\n",
                      "ops/oncall.md": "# On call\n\nThe rotation changes on Mondays.\n",
                      "ops/deep/more/notes.md": "# Deep\n\nA note far down.\n",
                      "todo.txt": "not markdown\n",
                      ".hidden/secret.md": "# Hidden\n\nnever loaded\n"}.items():
        (notes / rel).parent.mkdir(parents=True, exist_ok=True)
        (notes / rel).write_text(text)
    return notes


def _load(capsys: Any, store: Path, *argv: str) -> dict[str, Any]:
    """hms load --json ARGV on ``store``: its report (the load must succeed)."""
    assert main(["--store", str(store), "--json", "load", *argv]) == 0
    return json.loads(capsys.readouterr().out.strip())


def test_a_directory_loads_recursively_keyed_by_relative_path(tmp_path: Path, capsys) -> None:
    """Every *.md under the directory, hidden ones skipped; guide.md and ops/guide.md are two
    documents (guide, ops:guide); each episode names its file's absolute path as its source."""
    notes = _tree(tmp_path)
    store = tmp_path / "s"
    report = _load(capsys, store, str(notes))
    docs = {d["key"]: d for d in report["documents"]}
    assert set(docs) == {"guide.md", "ops/guide.md", "ops/oncall.md", "ops/deep/more/notes.md"}
    assert [docs[k]["document"] for k in sorted(docs)] == ["guide", "ops:deep:more:notes",
                                                          "ops:guide", "ops:oncall"]
    assert report["counts"] == {"new": 4, "changed": 0, "unchanged": 0, "removed": 0}
    assert main(["--store", str(store), "--json", "get", "ops:guide-0001"]) == 0
    episode = json.loads(capsys.readouterr().out)
    assert episode["sources"] == [str(notes / "ops" / "guide.md")]
    assert episode["text"] == "# Ops guide\n\nRestart the pager service."  # the H1 once
    # forget --source of one guide.md leaves the other
    assert main(["--store", str(store), "--json", "forget", "--source",
                 str(notes / "ops" / "guide.md")]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] == ["ops:guide-0001"]


def test_repeated_loads_count_true_and_removed_files_are_listed_then_pruned(tmp_path: Path,
                                                                           capsys) -> None:
    """A second load writes nothing (all unchanged); an edited file is changed, a new one new,
    a deleted one removed: listed and kept, forgotten by --prune, then no longer listed."""
    notes = _tree(tmp_path)
    store = tmp_path / "s"
    _load(capsys, store, str(notes))
    again = _load(capsys, store, str(notes))
    assert again["counts"] == {"new": 0, "changed": 0, "unchanged": 4, "removed": 0}
    (notes / "guide.md").write_text("# Guide\n\nInstall with make install, then activate.\n")
    (notes / "ops" / "new.md").write_text("# New\n\nA new note.\n")
    (notes / "ops" / "oncall.md").unlink()
    third = _load(capsys, store, str(notes))
    assert third["counts"] == {"new": 1, "changed": 1, "unchanged": 2, "removed": 1}
    assert third["removed"] == [str(notes / "ops" / "oncall.md")] and third["pruned"] == []
    assert main(["--store", str(store), "get", "ops:oncall-0001"]) == 0  # kept
    assert main(["--store", str(store), "load", str(notes)]) == 0
    human = capsys.readouterr().out
    assert "1 removed" in human and "--prune forgets them" in human and SEARCH_HINT in human
    pruned = _load(capsys, store, str(notes), "--prune")
    assert pruned["pruned"] == ["ops:oncall-0001"]
    assert main(["--store", str(store), "get", "ops:oncall-0001"]) == 1
    last = _load(capsys, store, str(notes))
    assert last["counts"] == {"new": 0, "changed": 0, "unchanged": 4, "removed": 0}


def test_glob_patterns_filter_a_directory(tmp_path: Path, capsys) -> None:
    """--glob '*.txt' loads text files at any depth; a pattern with / matches relative paths;
    a quoted glob argument is keyed relative to its fixed part."""
    notes = _tree(tmp_path)
    report = _load(capsys, tmp_path / "a", str(notes), "--glob", "*.txt")
    assert [d["key"] for d in report["documents"]] == ["todo.txt"]
    report = _load(capsys, tmp_path / "b", str(notes), "--glob", "ops/*.md")
    assert sorted(d["key"] for d in report["documents"]) == ["ops/guide.md", "ops/oncall.md"]
    report = _load(capsys, tmp_path / "c", str(notes / "**" / "*.md"))
    assert sorted(d["document"] for d in report["documents"]) == [
        "guide", "ops:deep:more:notes", "ops:guide", "ops:oncall"]
    assert pattern_regex("**/*.md").match("a/b/c.md") and pattern_regex("**/*.md").match("c.md")
    assert not pattern_regex("ops/*.md").match("ops/deep/x.md")
    assert document_name("a/b/READ.ME.md") == "a:b:READ.ME"


def test_special_files_are_never_read(tmp_path: Path) -> None:
    """A FIFO inside a loaded directory is skipped and a FIFO named on the command line is
    refused at once (exit 2), never opened for reading (which would block)."""
    notes = _tree(tmp_path)
    os.mkfifo(notes / "pipe.md")
    store = str(tmp_path / "s")
    done = subprocess.run([sys.executable, "-m", "hmsengine.cli", "--store", store, "--json",
                           "load", str(notes)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pipe.md" not in done.stdout
    done = subprocess.run([sys.executable, "-m", "hmsengine.cli", "--store", store, "load",
                           str(notes / "pipe.md")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "is a FIFO, not a regular file" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("argv,says", [
    (["nowhere"], "does not exist"),
    (["nothing*.md"], "matches no file"),
])
def test_bad_load_paths_are_one_line(tmp_path: Path, capsys, monkeypatch, argv: list[str],
                                     says: str) -> None:
    """A path that does not exist or a glob that matches nothing: exit 2 with the reason."""
    monkeypatch.chdir(tmp_path)
    assert main(["--store", str(tmp_path / "s"), "load", *argv]) == 2
    assert says in capsys.readouterr().err
