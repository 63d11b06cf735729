"""Shared fixtures: every engine test runs against a real directory and against ``path=None``."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

# The figures lines of the reliability tests (tests/reliability/reliability_host.report), taken
# from each test's report: under pytest-xdist (`make test` runs the suite over every core) the
# tests run in worker processes and only their reports come back to this one.
FIGURES_PROPERTY = "reliability figures"
_figures: list[str] = []

# New stores stay lexical in the suite unless a test asks for the bundled embedder (it unsets
# this): loading and running the model for every fact of every test would multiply the suite's
# time, and most tests check other things. tests/memory/test_default_hybrid.py covers the default.
os.environ.setdefault("HMS_EMBEDDER", "none")

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "nojit", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("nojit" if os.environ.get("NUMBA_DISABLE_JIT") == "1" else "default")


@pytest.fixture(params=["disk", "memory"])
def store_path(request: pytest.FixtureRequest, tmp_path: os.PathLike[str]) -> str | None:
    """A store location: a fresh directory on disk, or None for the in-memory store."""
    return str(tmp_path / "store") if request.param == "disk" else None


@pytest.fixture
def disk_path(tmp_path: os.PathLike[str]) -> str:
    """A fresh store directory on disk (for tests that reopen or inspect files)."""
    return os.path.join(str(tmp_path), "store")


@pytest.fixture
def no_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index builder merges no segments while writes come (it still folds, drops dead
    documents and consolidates when idle): for tests that build the segments they need."""
    from hmsengine.engine import indexer
    from hmsengine.index.mergepolicy import MergePolicy

    monkeypatch.setattr(indexer, "MERGE_POLICY",
                        MergePolicy(ratio=0.0, max_merge=0, max_segments=10**6))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Move the figures lines a reliability test reported onto its call report."""
    outcome = yield
    if call.when != "call":
        return
    host = sys.modules.get("reliability_host")
    if host is not None and host.FIGURES:
        report = outcome.get_result()
        report.user_properties.extend((FIGURES_PROPERTY, line) for line in host.FIGURES)
        host.FIGURES.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _figures.extend(value for name, value in report.user_properties if name == FIGURES_PROPERTY)


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """Print the reliability figures, so that a plain ``pytest -q`` run shows them too."""
    if _figures:
        terminalreporter.section("reliability figures")
        for line in _figures:
            terminalreporter.write_line(line)
