"""Run a child process until it says READY, let it work a while, SIGKILL it: its output."""

from __future__ import annotations

import signal
import subprocess
import sys
import time


def run_and_kill(args: list[str], delay: float) -> str:
    """``python *args`` killed ``delay`` seconds after it printed READY; its stdout. The child
    must die of the SIGKILL (not of an error of its own, whose stderr the assertion shows)."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith(b"READY")
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err.decode(errors="replace")[-2000:]
    return out.decode()
