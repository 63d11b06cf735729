"""``AsyncClient`` under trio and asyncio, and the client's own error handling."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket

import pytest
from serverproc import ServerProcess

from hmsengine import ForgetScope, InvalidRequest, NotFound
from hmsengine.client import AsyncClient, Client, ServerUnavailable
from hmsengine.memory.values import Explanation, RecallHit, RememberResult


async def _round_trip(url: str, tenant: str) -> None:
    async with AsyncClient(url, tenant=tenant) as hms:
        assert await hms.healthz() == {"status": "ok"}
        result = await hms.memory.remember("Dmitri keeps bees in Osaka", id="bees",
                                           event_time=dt.datetime(2023, 4, 1, tzinfo=dt.UTC))
        assert result == RememberResult(id="bees", created=True)
        hits = await hms.memory.recall("who keeps bees", kinds=("fact",))
        assert isinstance(hits[0], RecallHit) and hits[0].fact.event_time == 1_680_307_200_000
        assert isinstance(await hms.memory.explain("bees", "bees"), Explanation)
        assert (await hms.memory.get("bees")) is not None
        assert (await hms.memory.get("nothing")) is None
        with pytest.raises(NotFound):
            await hms.memory.history("nothing")
        put = await hms.documents.put("page", "a page about bees")
        assert put.created and (await hms.documents.get("page")) is not None
        assert [h.id for h in await hms.documents.search("page")] == ["page"]
        assert await hms.documents.delete("page") is True
        report = await hms.memory.forget(ForgetScope.ingested_before(
            dt.datetime(9999, 1, 1, tzinfo=dt.UTC)), dry_run=True)
        assert "bees" in report.removed and report.dry_run


async def test_async_client_under_trio(server: ServerProcess) -> None:
    """AsyncClient runs every kind of call under trio."""
    await _round_trip(server.url, "async-trio")


def test_async_client_under_asyncio(server: ServerProcess) -> None:
    """The same AsyncClient calls run under asyncio."""
    asyncio.run(_round_trip(server.url, "async-asyncio"))


def test_unreachable_server_is_server_unavailable() -> None:
    """A closed port is ServerUnavailable (a ConnectionError), not an httpx exception."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Client(f"http://127.0.0.1:{port}", timeout=5) as hms, \
            pytest.raises(ServerUnavailable) as refused:
        hms.memory.recall("x")
    assert isinstance(refused.value, ConnectionError)


def test_client_validates_times_before_sending(server: ServerProcess) -> None:
    """Naive datetimes and bad scope types are refused locally, as Memory refuses them."""
    with Client(server.url, tenant="local-checks") as hms:
        with pytest.raises(InvalidRequest, match="naive"):
            hms.memory.recall("x", as_of=dt.datetime(2024, 1, 1))
        with pytest.raises(InvalidRequest):
            hms.memory.forget("everything")  # type: ignore[arg-type]
        with pytest.raises(InvalidRequest):
            hms.memory.remember_many("not a list")  # type: ignore[arg-type]
