"""MCP over Streamable HTTP: start `hms serve` on a free local port, then use its /mcp tools
with the official MCP SDK's client, as an agent would (no network beyond 127.0.0.1).

    pip install 'hmsengine[server]'
    python examples/mcp_http_client.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str) -> None:
    async with httpx2.AsyncClient(headers={"X-HMS-Tenant": "demo"}) as http, \
            streamable_http_client(url + "/mcp", http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        print("tools:", [t.name for t in (await session.list_tools()).tools])
        await session.call_tool("remember", {"text": "Alice moved to Lisbon", "subject": "alice/city"})
        found = await session.call_tool("recall", {"query": "where does Alice live?"})
        print("recall:", [h["fact"]["text"] for h in json.loads(found.content[0].text)["items"]])
        page = await session.call_tool("list", {"limit": 10})
        print("list:", [f["text"] for f in json.loads(page.content[0].text)["items"]])


if __name__ == "__main__":
    root = tempfile.mkdtemp()
    server = subprocess.Popen([sys.executable, "-m", "hmsengine.cli", "serve", "--root", root,
                               "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "hms serve: listening on http://127.0.0.1:PORT"
        anyio.run(main, line.rsplit(" ", 1)[1].strip())
    finally:
        server.terminate()
        server.wait()
