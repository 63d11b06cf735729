"""The package is typed (PEP 561): a user's mypy, run on a script against the package as it is
built for installation, sees hmsengine's annotations and reports misuse."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BUILD = """
import sys
from setuptools.dist import Distribution

dist = Distribution({"script_name": "setup.py"})
dist.parse_config_files()  # pyproject.toml: the packages and package data a wheel holds
command = dist.get_command_obj("build_py")
command.build_lib = sys.argv[1]
dist.run_command("build_py")
"""

GOOD = """
import trio

from hmsengine import Engine, Memory, MemoryConfig, RecallHit
from hmsengine.client import Client
from hmsengine.policies import FactInfo
from hmsengine.vectormask import VectorMask


class SameKind:
    def supersedes(self, newer: FactInfo, older: FactInfo) -> bool:
        return newer.kind == older.kind


async def main() -> None:
    async with Engine.open(None) as engine:
        memory = Memory(engine, MemoryConfig(supersession=SameKind()))
        await memory.remember("Alice lives in Berlin", subject="alice/city", importance=0.5)
        hits: list[RecallHit] = await memory.recall("where does Alice live", k=3)
        score: float = hits[0].score
        print(score, hits[0].fact.importance)


def remote() -> None:
    with Client("http://127.0.0.1:8080", vector_mask=VectorMask("key")) as hms:
        print(hms.memory.recall("x", embedding=[0.0, 1.0])[0].fact.embedding)


trio.run(main)
"""

BAD = """
from hmsengine import Engine, Memory


async def main() -> None:
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        hits: list[int] = await memory.recall("where", k="three")
"""


def test_a_users_mypy_sees_the_annotations(tmp_path: Path) -> None:
    """Built for installation (setuptools' build_py with pyproject's package data), the package
    holds py.typed; mypy --strict on a user's script passes where it is used right and names
    the wrong types where it is not (without py.typed it would call the package untyped)."""
    lib = tmp_path / "site-packages"
    subprocess.run([sys.executable, "-W", "ignore", "-c", BUILD, str(lib)], cwd=ROOT, check=True,
                   capture_output=True, timeout=120)
    assert (lib / "hmsengine" / "py.typed").is_file()
    user = tmp_path / "user"
    user.mkdir()
    (user / "good.py").write_text(GOOD)
    (user / "bad.py").write_text(BAD)
    # PYTHONPATH puts the built package first on the interpreter's path, as an installed one;
    # mypy reads an installed package's annotations only if it holds py.typed.
    env = {**os.environ, "PYTHONPATH": str(lib)}

    def mypy(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                               "--cache-dir", str(tmp_path / "cache"), script],
                              cwd=user, env=env, capture_output=True, text=True, timeout=300)

    good = mypy("good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = mypy("bad.py")
    assert bad.returncode == 1
    assert 'has type "list[RecallHit]", variable has type "list[int]"' in bad.stdout
    assert 'Argument "k" to "recall" of "Memory" has incompatible type "str"; expected "int"' \
        in bad.stdout
    assert "py.typed" not in bad.stdout
