"""docs/cli.md documents every `hms` command and option; docs/http.md every HTTP route and
memory operation; the guide is docs/guide.md."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from hmsengine.cli import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _section(text: str, command: str) -> str:
    """The part of cli.md from the heading of ``hms COMMAND`` to the next heading."""
    match = re.search(rf"^#+ `hms {re.escape(command)}\b[^\n]*\n(.*?)(?=^#)", text + "\n#",
                      re.MULTILINE | re.DOTALL)
    assert match, f"docs/cli.md has no heading for `hms {command}`"
    return match.group(1)


def test_every_cli_command_and_option_is_documented():
    text = (DOCS / "cli.md").read_text()
    for option in ("--store", "--json", "--debug", "--key-env"):
        assert f"`{option}" in text
    commands = _subcommands()
    assert {"remember", "recall", "explain", "history", "forget", "load", "compact", "put", "get",
            "delete", "stats", "demo", "serve", "mcp"} <= set(commands)
    for name, sub in commands.items():
        section = _section(text, name)
        assert "```console" in section, f"`hms {name}` has no example"
        for action in sub._actions:
            for opt in action.option_strings:
                if opt.startswith("--") and opt not in ("--help", "--store", "--json", "--debug",
                                                        "--key-env"):
                    assert f"`{opt}" in section, f"`hms {name} {opt}` is not in docs/cli.md"


def test_every_http_route_and_operation_is_documented():
    pytest.importorskip("starlette")
    from hmsengine.memory.jsonapi import OPERATIONS
    from hmsengine.server.app import ServerApp

    text = (DOCS / "http.md").read_text()
    routes = ServerApp(None).app.routes  # type: ignore[arg-type]
    assert len(routes) >= 5
    for route in routes:
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path)
        for method in sorted(route.methods - {"HEAD"}):
            assert f"`{method} {path}`" in text, f"{method} {path} is not in docs/http.md"
    for op in OPERATIONS:
        assert f"| `{op}` |" in text, f"memory operation {op} is not in docs/http.md"


def test_guide_is_lowercase_and_linked():
    assert "guide.md" in {p.name for p in DOCS.iterdir()}
    assert "GUIDE.md" not in {p.name for p in DOCS.iterdir()}
    readme = (DOCS.parent / "README.md").read_text()
    assert "GUIDE.md" not in readme and "guide.md" in readme
