"""``ForgetScope.source`` over HTTP (the client against a real server) and MCP (a stdio session)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from serverproc import ServerProcess

from hmsengine import ForgetScope
from hmsengine.client import AsyncClient


async def test_forget_by_source_over_http(server: ServerProcess) -> None:
    """A document loaded over HTTP is listed by a dry run, then forgotten, by its source."""
    async with AsyncClient(server.url, tenant="forget-source") as hms:
        loaded = await hms.memory.call("load", {"document": "handbook",
                                                "text": "# Handbook\n\nRules of the house.\n"})
        kept = await hms.memory.remember("unrelated fact about tea")
        report = await hms.memory.forget(ForgetScope.source("handbook"), dry_run=True)
        assert list(report.removed) == loaded["episodes"] and report.dry_run
        report = await hms.memory.forget(ForgetScope.source("handbook"), purge=True)
        assert list(report.removed) == loaded["episodes"] and not report.dry_run
        assert await hms.memory.get(loaded["episodes"][0]) is None
        assert await hms.memory.get(kept.id) is not None


async def test_forget_by_source_over_mcp(tmp_path: Path) -> None:
    """The forget tool takes ``source``; a dry run lists, the real call removes."""
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "hmsengine.cli", "mcp", "--store", str(tmp_path / "store")])
    with open(tmp_path / "mcp.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            tool = next(t for t in (await session.list_tools()).tools if t.name == "forget")
            assert "source" in tool.input_schema["properties"]
            loaded = await session.call_tool("load", {"document": "recipes",
                                                      "text": "# Recipes\n\nBake bread.\n"})
            assert not loaded.is_error, loaded.content
            episodes = json.loads(loaded.content[0].text)["episodes"]
            listed = await session.call_tool("forget", {"source": "recipes", "dryRun": True})
            assert json.loads(listed.content[0].text)["removed"] == episodes
            gone = await session.call_tool("forget", {"source": "recipes", "purge": True})
            assert json.loads(gone.content[0].text)["removed"] == episodes
            again = await session.call_tool("forget", {"source": "recipes"})
            assert json.loads(again.content[0].text)["removed"] == []
