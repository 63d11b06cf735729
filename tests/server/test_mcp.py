"""``hms mcp --store PATH`` as a subprocess, driven by the ``mcp`` package's client over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from hmsengine.mcp import TOOLS, available_tools
from hmsengine.memory.jsonapi import OPERATIONS


def _text(result) -> str:
    assert result.content and result.content[0].type == "text"
    return result.content[0].text


async def test_mcp_tools_over_stdio(tmp_path: Path) -> None:
    """The tools are listed with schemas and descriptions; remember, recall, explain, history
    and forget work; a bad call is a tool error the model can read."""
    store = tmp_path / "store"
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "hmsengine.cli", "mcp", "--store", str(store)])
    with open(tmp_path / "mcp.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            names = {t.name for t in listed}
            assert {"remember", "recall", "explain", "forget", "history"} <= names
            assert ({"load", "profile"} <= names) == ({"load", "profile"} <= set(OPERATIONS))
            for tool in listed:
                assert tool.description and len(tool.description) > 40
                assert tool.input_schema["type"] == "object" and tool.input_schema["properties"]

            remembered = await session.call_tool("remember", {
                "text": "Alice moved to Lisbon in May 2024", "subject": "alice/city",
                "entities": ["Alice", "Lisbon"], "validFrom": "2024-05-01T00:00:00Z"})
            assert not remembered.is_error, _text(remembered)
            fact_id = json.loads(_text(remembered))["id"]
            assert remembered.structured_content["created"] is True

            recalled = await session.call_tool("recall", {"query": "where does Alice live?"})
            assert not recalled.is_error
            items = json.loads(_text(recalled))["items"]
            assert items[0]["fact"]["id"] == fact_id and "Lisbon" in items[0]["fact"]["text"]

            explained = await session.call_tool("explain", {"query": "Alice Lisbon",
                                                            "id": fact_id})
            assert not explained.is_error and json.loads(_text(explained))["rank"] == 1

            history = await session.call_tool("history", {"id": fact_id})
            assert [f["id"] for f in json.loads(_text(history))["items"]] == [fact_id]

            if "profile" in names:
                profile = await session.call_tool("profile", {})
                assert "Lisbon" in json.loads(_text(profile))["block"]

            refused = await session.call_tool("forget", {"ids": [fact_id], "subject": "x"})
            assert refused.is_error and "exactly one" in _text(refused)

            forgotten = await session.call_tool("forget", {"ids": [fact_id]})
            assert json.loads(_text(forgotten))["removed"] == [fact_id]
            again = await session.call_tool("recall", {"query": "where does Alice live?"})
            assert json.loads(_text(again))["items"] == []

            missing = await session.call_tool("explain", {"query": "x", "id": fact_id})
            assert missing.is_error and _text(missing).startswith("not_found")
    assert store.is_dir()


def test_tools_cover_the_contract() -> None:
    """Each tool names an operation of the JSON contract; load and profile only when present."""
    assert {t.op for t in available_tools()} <= set(OPERATIONS)
    assert [t.name for t in available_tools()] == [t.name for t in TOOLS if t.op in OPERATIONS]


async def test_a_recall_gives_the_model_no_vectors(tmp_path: Path) -> None:
    """A fact's embedding is left out of what a tool answers (text and structured content): a
    model cannot read 384 floats; the JSON API still returns it."""
    from hmsengine import Engine
    from hmsengine.mcp import call_tool

    async with Engine.open(str(tmp_path / "store")) as engine:
        memory = engine.memory()
        vector = [0.5, 0.25, 0.125, 0.0625]
        await memory.remember("Erin keeps bees on the roof", embedding=vector)
        body = await memory.call("recall", {"query": "bees"})
        assert body["items"][0]["fact"]["embedding"] == vector  # the JSON API keeps it
        is_error, text, structured = await call_tool(memory, "recall", {"query": "bees"})
        assert not is_error and "embedding" not in text and "0.0625" not in text
        assert structured is not None and "Erin" in structured["items"][0]["fact"]["text"]
        assert "embedding" not in structured["items"][0]["fact"]
