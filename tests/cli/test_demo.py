"""`make demo` / `hms demo`: exits 0, names the superseded and current facts, reports the purge
scan clean, and stays quick."""

from __future__ import annotations

import subprocess
import sys
import time

from hmsengine.cli import main


def _check(out: str) -> None:
    assert "superseded fact: alice-paris 'Alice lives in Paris'" in out
    assert "current fact: alice-berlin 'Alice lives in Berlin'" in out
    assert "as of 2022-06: Alice lives in Paris [current]" in out
    assert "now:           Alice lives in Berlin [current]" in out
    assert "alice-paris:  not returned" in out and "superseded now" in out
    assert "fact:     'Dan works on the storage team'" in out
    assert "before: \"Bob's locker code is Q4417\" is in" in out
    assert "the forgotten text was found in NONE of them" in out
    assert "Where next:" in out


def test_demo_as_a_process():
    """What `make demo` runs, from a process of its own."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "hmsengine.demo"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 10
    _check(done.stdout)
    assert done.stderr == ""


def test_hms_demo(capsys):
    assert main(["demo"]) == 0
    _check(capsys.readouterr().out)
