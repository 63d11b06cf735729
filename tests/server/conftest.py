"""Fixtures for the server tests: a shared ``hms serve`` subprocess on 127.0.0.1, port 0."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from serverproc import ServerProcess


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server shared by the tests that use their own tenants (default options)."""
    root = tmp_path_factory.mktemp("shared") / "root"
    proc = ServerProcess(root)
    yield proc
    rc = proc.stop()
    assert rc == 0, proc.stderr()
