"""Fixtures of the replication tests: a real S3 server (moto) on 127.0.0.1 for the session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from s3server import S3Server


@pytest.fixture(scope="session")
def s3_session() -> Iterator[S3Server]:
    server = S3Server()
    with pytest.MonkeyPatch.context() as mp:
        for name, value in server.env.items():
            mp.setenv(name, value)
        yield server
    server.stop()


@pytest.fixture
def s3(s3_session: S3Server) -> S3Server:
    """The session's S3 server (each test makes its own bucket with ``s3.bucket()``)."""
    return s3_session
