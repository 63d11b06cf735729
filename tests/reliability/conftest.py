"""The reliability tests' figures reach the terminal summary through tests/conftest.py (each
line rides on its test's report, so a run spread over pytest-xdist workers shows them too)."""
