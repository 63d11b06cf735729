"""Every example in README.md and docs/*.md runs as written (issue 23), so the docs cannot drift.

Each Markdown file's ``python``, ``console`` and ``sh`` blocks run in order, in one fresh
directory and one shell, as a reader who follows the file would run them: with the package's
``bin`` directory first on ``PATH`` (what the README's ``. .venv/bin/activate`` does), and a few
files the examples name (``data/people.csv``, ``notes/guide.md``: :data:`FIXTURES`). In a
``console`` block the lines after ``$ `` are commands (a trailing ``\\`` continues one) and the
other lines are their output; in a ``sh`` block every line is a command. A ``python`` block is
saved and run as a script (``python block.py``) at its place in the file. Every command must exit
0, or the code its comment states (``# exit 1``), and print no traceback. A command ending in
``&`` runs in the background (a server), and the next command waits until the port it names
answers; the file's background commands are stopped at its end. The port 8080 of the examples
becomes a free port (the one change made to what is written), so that the suite never depends on
one.

A block that cannot run here is marked in the Markdown, on the line before it, with
``<!-- docs-test: skip: REASON -->``: its reason is printed, and there may be at most
``MAX_SKIPPED`` of them. Two kinds of python block are not programs, and say so in their fence's
info string (```` ```python signature ````, ```` ```python fragment ````; the first word still
names the language for highlighting): a ``signature`` declares the contract (API.md, only
there), and a ``fragment`` is a part of a program whose whole is an ``examples/`` file that the
same Markdown file names (and that file must exist).
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = ("python", "console", "sh")
# The info words of python blocks that are not programs (the module docstring), and where each
# may be used.
NOT_PROGRAMS = {"signature": ("API.md",), "fragment": ("langgraph.md", "mcp.md", "openai-agents.md")}
SKIP = re.compile(r"<!--\s*docs-test:\s*skip:\s*(?P<reason>.+?)\s*-->")
EXIT = re.compile(r"#\s*exit (\d+)")
COMMENT = re.compile(r"\s+#[^'\"]*$")  # a trailing comment (one holding no quote)
MAX_SKIPPED = 17  # 7 of them need an S3 bucket (replication.md, cli.md's replication examples)
FILE_SECONDS = 600
GUIDE_NOTE = """# Guide

How to install and use the tool.

## Install

Run make install, then put .venv/bin on PATH.

## Use

Remember facts; recall them as of any moment.
"""
FIXTURES = {
    "data/people.csv": "id,name\n1,Ada\n2,Bob\n3,Cy\n",
    "data/orders.csv": "id;customer;amount\n1;Ada;12,50\n2;Bob;7,00\n3;Cy;30,25\n",
    "data/log.jsonl": "".join(f'{{"n": {i}, "event": "tick"}}\n' for i in range(200)),
    "notes/guide.md": GUIDE_NOTE,
    "notes/ops/guide.md": "# Ops guide\n\nRestart the service with systemctl restart hms.\n",
    "notes/ops/oncall.md": "# On call\n\nThe pager rotates every Monday.\n",
    "minutes.txt": "Carol will lead the search team.\n\nDan moves to storage in March.\n",
}


@attrs.frozen
class Block:
    """A fenced block of a Markdown file: its language, first line number, text, skip reason."""

    language: str
    line: int
    text: str
    skip: str | None
    info: str | None = None  # "signature" or "fragment": not a program (NOT_PROGRAMS)


def blocks(path: Path) -> list[Block]:
    """The python, console and sh blocks of ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    n = 0
    while n < len(lines):
        opening = re.match(r"^```(\w*)(?:[ \t]+(\w+))?[ \t]*$", lines[n])
        if opening is None:
            n += 1
            continue
        end = next(i for i in range(n + 1, len(lines)) if lines[i].startswith("```"))
        language = opening.group(1)
        if language in LANGUAGES:
            before = lines[n - 1] if n else ""
            marker = SKIP.search(before)
            found.append(Block(language, n + 1, "\n".join(lines[n + 1:end]) + "\n",
                               marker["reason"] if marker else None, opening.group(2)))
        n = end + 1
    return found


def commands(block: Block) -> list[str]:
    """The shell commands of a console or sh block, continuation lines joined."""
    out: list[str] = []
    pending: str | None = None
    for raw in block.text.splitlines():
        line = raw.rstrip()
        if pending is not None:
            pending += "\n" + line
            if not line.endswith("\\"):
                out.append(pending)
                pending = None
            continue
        if block.language == "console":
            if not line.startswith("$ "):
                continue  # output
            line = line[2:]
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            pending = line
        else:
            out.append(line)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


WAIT_PORT = """__wait_port() {
  python - "$1" <<'PY'
import socket, sys, time
deadline = time.monotonic() + 90
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit("nothing answered on port " + sys.argv[1])
PY
}
"""


def script(path: Path, work: Path, port: int) -> tuple[str, list[str]]:
    """The bash script that runs the runnable blocks of ``path`` in ``work``, and the skipped
    blocks' descriptions."""
    name = path.relative_to(ROOT)
    lines = ["set -u", f"cd {shlex.quote(str(work))}", WAIT_PORT,
             "trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null' EXIT"]
    skipped: list[str] = []
    for block in blocks(path):
        where = f"{name}:{block.line}"
        if block.skip is not None:
            skipped.append(f"{where} ({block.language}): {block.skip}")
            continue
        if block.info in NOT_PROGRAMS:
            continue  # checked by test_blocks_that_are_not_programs_say_so
        text = block.text.replace("8080", str(port))
        if block.language == "python":
            file = work / f"block_{block.line}.py"
            file.write_text(text)
            runs = [f"python {file.name}"]
        else:
            runs = commands(Block(block.language, block.line, text, None))
        for command in runs:
            expected = EXIT.search(command)
            label = shlex.quote(f"{where}: {command}")
            bare = COMMENT.sub("", command).rstrip()
            if bare.endswith("&"):
                lines.append(f"echo '>>> '{label}")
                lines.append(f"{bare[:-1]} > bg_{block.line}.log 2>&1 &")
                port_used = re.search(r"--port\s+(\d+)", command)
                if port_used:
                    lines.append(f"__wait_port {port_used.group(1)} || "
                                 f"{{ cat bg_{block.line}.log; exit 97; }}")
                continue
            lines.append(f"echo '>>> '{label}")
            lines.append(f"{{ {command}\n}} 2> .stderr; rc=$?; cat .stderr >&2")
            lines.append(f"if [ $rc -ne {expected.group(1) if expected else 0} ] || "
                         "grep -q 'Traceback (most recent call last)' .stderr; then "
                         f"echo '!!! failed (exit '$rc'): '{label} >&2; exit 98; fi")
    return "\n".join(lines) + "\n", skipped


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_doc_examples_run_as_written(path: Path, tmp_path: Path) -> None:
    """Every python, console and sh block of the file runs in order and exits as it says."""
    for relative, content in FIXTURES.items():
        target = tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    text, skipped = script(path, tmp_path, _free_port())
    (tmp_path / "run.sh").write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMS_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HMS_EMBEDDER"] = "none"  # as the rest of the suite: the model's load per command is slow
    done = subprocess.run(["bash", str(tmp_path / "run.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=FILE_SECONDS,
                          stdin=subprocess.DEVNULL)
    for line in skipped:
        print(f"not run: {line}")
    assert done.returncode == 0, (done.stdout[-6000:] + "\n" + done.stderr[-6000:])


def test_skipped_examples_are_few_and_say_why() -> None:
    """At most MAX_SKIPPED blocks of all the docs are skipped, each with its reason."""
    skipped = [(path, block) for path in DOCS for block in blocks(path) if block.skip is not None]
    assert len(skipped) <= MAX_SKIPPED, [f"{p.name}:{b.line}" for p, b in skipped]
    assert all(len(block.skip or "") >= 10 for _, block in skipped)


def test_blocks_that_are_not_programs_say_so() -> None:
    """Only API.md declares signatures; a fragment's file names an examples/ program that exists;
    no other info word hides a block from the run."""
    for path in DOCS:
        named = re.findall(r"examples/[\w.-]+\.py", path.read_text(encoding="utf-8"))
        for block in blocks(path):
            if block.info is None:
                continue
            where = f"{path.name}:{block.line}"
            assert block.language == "python" and block.info in NOT_PROGRAMS, where
            assert path.name in NOT_PROGRAMS[block.info], where
            if block.info == "fragment":
                assert named and all((ROOT / n).is_file() for n in named), where
