"""Each integration's example in examples/ runs to the end, offline, and prints what it says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(("script", "module", "expected"), [
    ("langgraph_store.py", "langgraph", "Related: I live in Porto"),
    ("openai_agents_session.py", "agents", "you first told me: 'My name is Ana.'"),
    ("mcp_http_client.py", "mcp", "recall: ['Alice moved to Lisbon']"),
])
def test_example_runs(script: str, module: str, expected: str, tmp_path: Path) -> None:
    """The example exits 0 and its output shows the memory at work."""
    pytest.importorskip(module)
    done = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True,
                          text=True, timeout=180, cwd=tmp_path,
                          env={**os.environ, "HMS_EMBEDDER": "none"})
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
