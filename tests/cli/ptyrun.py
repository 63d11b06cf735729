"""Run ``hms`` as a subprocess on a pseudo-terminal (so it believes it writes to a terminal)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys


def run_on_pty(argv: list[str], *, timeout: float = 120) -> tuple[int, bytes]:
    """(exit code, everything the command wrote) of ``python -m hmsengine.cli *argv``."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "hmsengine.cli", *argv], stdin=slave,
                            stdout=slave, stderr=slave, close_fds=True,
                            env={**os.environ, "TERM": "xterm", "COLUMNS": "100"})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO once the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks)
