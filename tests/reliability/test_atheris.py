"""Every atheris target (tests/reliability/atheris_fuzz.py) runs briefly in the default suite: a
real libFuzzer run in a subprocess, which fails on any exception other than the readers'
documented errors. ``HMS_ATHERIS_RUNS`` sets the executions per target (default 3000);
``make stress`` uses ``HMS_ATHERIS_SECONDS`` instead (a time budget per target)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_host import report

pytest.importorskip("atheris")

HARNESS = Path(__file__).with_name("atheris_fuzz.py")
RUNS = int(os.environ.get("HMS_ATHERIS_RUNS", "3000"))
SECONDS = int(os.environ.get("HMS_ATHERIS_SECONDS", "0"))
TOTALS: dict[str, int] = {}


@pytest.mark.parametrize("target", ["journal", "record", "segment", "jsonl", "manifest"])
def test_atheris_target(target: str, tmp_path: Path) -> None:
    budget = [f"-max_total_time={SECONDS}"] if SECONDS else [f"-runs={RUNS}"]
    proc = subprocess.run(
        [sys.executable, str(HARNESS), target, *budget, "-seed=1", f"-artifact_prefix={tmp_path}/",
         "-print_final_stats=1"],
        capture_output=True, text=True, timeout=max(600, SECONDS * 2), cwd=tmp_path)
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, f"atheris found a crash in {target}:\n{tail}"
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", proc.stderr)
    TOTALS[target] = int(runs.group(1)) if runs else RUNS


def test_atheris_figures() -> None:
    """Runs last in this module: prints the executions per target."""
    report(f"atheris: {TOTALS} executions, total {sum(TOTALS.values())}, 0 crashes")
