"""Print the reliability figures (examples, fault points, crash states, fuzz cases, violations)
in the terminal summary, so that a plain ``pytest -q`` run shows them too."""

from __future__ import annotations

from reliability_host import FIGURES


def pytest_terminal_summary(terminalreporter) -> None:
    if FIGURES:
        terminalreporter.section("reliability figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
