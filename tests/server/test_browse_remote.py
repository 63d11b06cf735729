"""Browsing and retention through ``Client``/``AsyncClient`` and ``hms list``/``hms retention``:
the same values and errors as the Python API."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from serverproc import ServerProcess

from hmsengine import InvalidRequest
from hmsengine.cli import main
from hmsengine.client import AsyncClient, Client
from hmsengine.memory.values import Page


def test_client_lists_counts_and_expires(server: ServerProcess) -> None:
    """Client.list pages (a Page of Facts), count agrees, retain_until travels as retainUntil,
    apply_retention is a dry run first, set_retention returns the defaults; a foreign cursor
    is InvalidRequest with status 422."""
    with Client(server.url, tenant="browse") as hms:
        m = hms.memory
        for n in range(4):
            m.remember(f"note {n}", id=f"n{n}", namespace="notes")
        m.remember("brief", id="b", namespace="notes",
                   retain_until=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
        first = m.list(namespace="notes", limit=3)
        assert isinstance(first, Page) and [f.id for f in first.items] == ["n3", "n2", "n1"]
        rest = m.list(namespace="notes", limit=3, cursor=first.next_cursor)
        assert [f.id for f in rest.items] == ["n0"] and rest.next_cursor is None
        assert m.count(namespace="notes") == 4 and m.count(status="expired-retention") == 1
        assert m.list(status="all", namespace="notes").items[0].retain_until == 946_684_800_000
        assert m.apply_retention().removed == ("b",) and m.get("b") is not None
        assert m.apply_retention(dry_run=False).removed == ("b",) and m.get("b") is None
        assert m.set_retention("notes", dt.timedelta(days=30)) == {"notes": 30 * 86_400_000}
        with pytest.raises(InvalidRequest) as caught:
            m.list(namespace="other", cursor=first.next_cursor)
        assert caught.value.status == 422  # type: ignore[attr-defined]


async def test_async_client_lists(server: ServerProcess) -> None:
    """AsyncClient.list and count, the same answers."""
    async with AsyncClient(server.url, tenant="browse-async") as hms:
        await hms.memory.remember("one", id="one")
        page = await hms.memory.list()
        assert [f.id for f in page.items] == ["one"] and await hms.memory.count() == 1


def test_cli_list_and_retention(tmp_path, capsys) -> None:
    """hms list prints pages and the cursor of the next; --json gives items and nextCursor;
    hms retention set/show/apply; a bad duration is exit 2."""
    store = str(tmp_path / "store")
    for n in range(3):
        assert main(["remember", f"cli note {n}", "--id", f"c{n}", "--namespace", "chat",
                     "--store", store]) == 0
    capsys.readouterr()
    assert main(["list", "--namespace", "chat", "--limit", "2", "--json", "--store", store]) == 0
    page = json.loads(capsys.readouterr().out)
    assert [f["id"] for f in page["items"]] == ["c2", "c1"] and page["nextCursor"]
    assert main(["list", "--namespace", "chat", "--limit", "2", "--cursor", page["nextCursor"],
                 "--store", store]) == 0
    out = capsys.readouterr().out
    assert "c0" in out and "more:" not in out
    assert main(["retention", "set", "chat", "30d", "--store", store]) == 0
    assert main(["retention", "show", "--json", "--store", store]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {
        "retention": {"chat": 30 * 86_400_000}}
    assert main(["remember", "old", "--id", "old", "--retain-until", "2001-01-01T00:00:00Z",
                 "--store", store]) == 0
    assert main(["retention", "apply", "--dry-run", "--store", store]) == 0
    assert "would forget 1 fact(s)" in capsys.readouterr().out
    assert main(["retention", "set", "chat", "soon", "--store", store]) == 2
