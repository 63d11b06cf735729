"""Run a child process until it says READY (or a later line), let it work a while, SIGKILL it:
its output."""

from __future__ import annotations

import signal
import subprocess
import sys
import time


def run_and_kill(args: list[str], delay: float, *, after: str = "READY") -> str:
    """``python *args`` killed ``delay`` seconds after it printed a line starting with ``after``
    (``READY`` by default; the child must print READY first); its whole stdout. Waiting for a
    later line (e.g. the start of one operation) lands kills inside short operations however
    fast the machine is. The child must die of the SIGKILL (not of an error of its own, whose
    stderr the assertion shows)."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    seen: list[bytes] = []
    try:
        assert proc.stdout is not None
        seen.append(proc.stdout.readline())
        assert seen[0].startswith(b"READY")
        while not seen[-1].startswith(after.encode()):
            line = proc.stdout.readline()
            if not line:
                break  # the child ended (its error shows below)
            seen.append(line)
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err.decode(errors="replace")[-2000:]
    return b"".join(seen).decode() + out.decode()
