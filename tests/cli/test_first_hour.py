"""What a newcomer runs into in the first hour (issue 23): a missing extra, a wrong ``--store``,
a read command on a path with no store, an empty fact, a forget that matches nothing. Each is one
line naming what to do and a non-zero exit, never a traceback, and nothing is left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from hmsengine import Engine, InvalidRequest
from hmsengine.cli import CREATING_COMMANDS, main

# A child that runs `hms` (or an import) as if the named packages were not installed.
WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # import raises ImportError; importlib.util.find_spec gives None
code = sys.argv[2]
if code == "cli":
    from hmsengine.cli import main
    sys.exit(main(sys.argv[3:]))
exec(code)
"""


def _without(modules: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT, modules, *args], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("argv,missing", [
    (["serve", "--root", "ROOT", "--port", "0"], "starlette,hypercorn,httpx,mcp"),
    (["mcp", "--store", "STORE"], "mcp"),
])
def test_a_missing_server_extra_is_one_line_naming_the_install(tmp_path: Path, argv: list[str],
                                                              missing: str) -> None:
    """hms serve and hms mcp without the server extra: one error line with the exact install
    command, exit 2, no traceback."""
    argv = [a.replace("ROOT", str(tmp_path / "root")).replace("STORE", str(tmp_path / "s"))
            for a in argv]
    done = _without(missing, "cli", *argv)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "needs the 'server' extra" in lines[0]
    assert "pip install 'hmsengine[server]'" in lines[0] and "make install" in lines[0]
    assert not (tmp_path / "root").exists() and not (tmp_path / "s").exists()


@pytest.mark.parametrize("code,extra", [
    ("from hmsengine.client import Client", "server"),
    ("from hmsengine.embedders import MiniLMEmbedder; MiniLMEmbedder()", "embed"),
])
def test_a_missing_extra_on_import_names_the_install(code: str, extra: str) -> None:
    """The Python client and the bundled embedder without their extra raise an ImportError
    whose message is the extra and the command that installs it."""
    modules = "httpx" if extra == "server" else "onnxruntime"
    done = _without(modules, code)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("hmsengine.extras.MissingExtra:"), last
    assert f"needs the '{extra}' extra" in last and f"pip install 'hmsengine[{extra}]'" in last


def _listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_a_store_path_that_cannot_hold_a_store_is_one_line_and_leaves_nothing(tmp_path: Path,
                                                                              capsys) -> None:
    """--store naming a file, a path that cannot be created, or a directory that is not a
    store: one error line, exit 2, and nothing created (no LOCK file)."""
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("buy milk")
    before = _listing(tmp_path)
    for store, says in ((tmp_path / "a-file", "is not a directory"),
                        ("/proc/no/such/dir", "cannot create the store directory"),
                        (tmp_path / "a-file" / "below", "cannot create the store directory"),
                        (tmp_path / "notes", "is not empty and is not an hmsengine store")):
        for argv in (["remember", "a fact"], ["init"], ["load", str(tmp_path / "notes")]):
            assert main(["--store", str(store), *argv]) == 2, (store, argv)
            err = capsys.readouterr().err
            assert says in err and "Traceback" not in err, err
            assert len([line for line in err.splitlines() if line.startswith("error")]) == 1
    assert _listing(tmp_path) == before


async def test_engine_open_refuses_a_file_and_leaves_a_foreign_directory_as_it_was(
        tmp_path: Path) -> None:
    """Engine.open of a file is InvalidRequest; of a non-store directory too, and it creates
    no LOCK file there."""
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep.txt").write_text("x")
    for path in (tmp_path / "f", tmp_path / "d"):
        with pytest.raises(InvalidRequest):
            async with Engine.open(path):
                pass
    assert os.listdir(tmp_path / "d") == ["keep.txt"]


READING = [["recall", "x"], ["get", "x"], ["history", "x"], ["explain", "x", "y"], ["stats"],
           ["forget", "--subject", "s"], ["compact"], ["delete", "x"], ["export", "out.jsonl"],
           ["snapshot", "snap"], ["hydrate", "x"], ["reembed"], ["list"], ["retention", "show"],
           ["retention", "set", "chat", "30d"]]


@pytest.mark.parametrize("argv", READING, ids=["-".join(a[:2]) for a in READING])
def test_a_read_command_on_a_path_with_no_store_says_so(tmp_path: Path, argv: list[str],
                                                        capsys, monkeypatch) -> None:
    """A command that does not add to a store, on a path with no store (a typo), says "no
    store at PATH" and exits 2; it creates nothing (neither the store nor its directory)."""
    monkeypatch.chdir(tmp_path)
    typo = tmp_path / "my-stor"
    assert main(["--store", str(typo), *argv]) == 2
    err = capsys.readouterr().err
    assert f"no store at {typo}" in err and "Traceback" not in err
    (tmp_path / "empty").mkdir()  # an empty directory holds no store either
    assert main(["--store", str(tmp_path / "empty"), *argv]) == 2
    assert _listing(tmp_path) == ["empty"]


def test_only_commands_that_add_create_a_store(tmp_path: Path) -> None:
    """The commands that create a store are those that add to it; every other is refused."""
    assert set(CREATING_COMMANDS) == {"init", "remember", "remember-file", "put", "load",
                                      "import", "restore"}
    assert not {a[0] for a in READING} & set(CREATING_COMMANDS)


def test_empty_fact_text_is_invalid_everywhere(tmp_path: Path, capsys) -> None:
    """Empty or blank fact text is InvalidRequest (Python, JSON contract, hms: exit 2); a
    file-backed fact without a summary is still allowed."""
    store = str(tmp_path / "s")
    for text in ("", "   ", "\n\t \u3000"):
        assert main(["--store", store, "remember", text]) == 2
        assert "text: empty or only white space" in capsys.readouterr().err

    async def check() -> None:
        async with Engine.open(None) as engine:
            memory = engine.memory()
            for text in ("", " \n"):
                with pytest.raises(InvalidRequest, match="empty or only white space"):
                    await memory.remember(text)
            with pytest.raises(InvalidRequest, match=r"inputs\[1\].text"):
                await memory.remember_many([{"text": "ok"}, {"text": " "}])
            with pytest.raises(InvalidRequest, match="text: empty"):
                await memory.call("remember", {"text": "  "})
            assert engine.statistics().documents == 0
            (tmp_path / "f.txt").write_text("bytes")
            assert (await memory.remember_file(str(tmp_path / "f.txt"))).created

    trio.run(check)


def test_forget_that_matches_nothing_exits_1_and_names_missing_ids(tmp_path: Path, capsys) -> None:
    """forget whose scope matches nothing says "0 facts" and exits 1; --ids names the ids that
    hold no fact (the others are forgotten), exit 1; a forget that removes exits 0."""
    store = str(tmp_path / "s")
    assert main(["--store", store, "remember", "Bob likes tea", "--id", "tea", "--entity", "bob"]) == 0
    capsys.readouterr()
    assert main(["--store", store, "forget", "--subject", "nobody"]) == 1
    assert "nothing to forget: the scope matched 0 facts" in capsys.readouterr().out
    assert main(["--store", store, "forget", "--ids", "tea", "ghost", "ghost2", "--dry-run"]) == 1
    out = capsys.readouterr().out
    assert "would forget 1 fact(s): tea" in out and "not found: ghost, ghost2" in out
    assert main(["--store", store, "--json", "forget", "--ids", "ghost", "tea"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["removed"] == ["tea"] and report["not_found"] == ["ghost"]
    assert report["matched"] == 1
    assert main(["--store", store, "remember", "Bob likes cake", "--entity", "bob"]) == 0
    assert main(["--store", store, "forget", "--entity", "bob"]) == 0


def test_every_extra_a_message_names_exists_and_make_install_has_them() -> None:
    """Every `hmsengine[EXTRA]` the code and docs name is an extra of pyproject.toml, and
    `make install` (what the README and the hints send a clone to) installs each of them."""
    import re
    import tomllib

    from hmsengine.extras import EXTRAS, install_command

    root = Path(__file__).resolve().parents[2]
    declared = set(tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"])
    texts = [p.read_text() for p in (*root.joinpath("hmsengine").rglob("*.py"),
                                     *root.joinpath("docs").glob("*.md"), root / "README.md")]
    named = {m for text in texts for m in re.findall(r"hmsengine\[([a-z,]+)\]", text)}
    assert named and {e for group in named for e in group.split(",")} <= declared
    assert set(EXTRAS) <= declared
    install = re.search(r"pip install -q -e '\.\[([a-z,]+)\]'\n.*\n\ttouch \$@\n\ninstall:",
                        (root / "Makefile").read_text())
    assert install and set(install.group(1).split(",")) == set(EXTRAS)
    assert all("make install" in install_command(extra) for extra in EXTRAS)
