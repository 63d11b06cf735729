"""`hms serve --replicate-to` in real child processes: SIGKILL, restore elsewhere, the lease,
takeover and fencing, against a real S3 server (moto) on 127.0.0.1."""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import trio
from s3server import S3Server

sys.path.insert(0, str(Path(__file__).parents[1] / "server"))
from serverproc import ServerProcess

from hmsengine import Engine, StoreLocked
from hmsengine.client import Client
from hmsengine.engine import restore_from_bucket
from hmsengine.errors import HmsError
from hmsengine.replication.options import Replication, parse_target

LAG = 1.0


def health(url: str) -> dict[str, object]:
    return httpx.get(f"{url}/healthz", timeout=10).json()  # type: ignore[no-any-return]


def wait_caught_up(url: str, tenants: set[str], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rep = health(url).get("replication") or {}
        figures = rep.get("tenants", {}) if isinstance(rep, dict) else {}
        if set(figures) >= tenants and all(
                f["pendingBytes"] == 0 and f["lagMs"] == 0 for f in figures.values()):
            return
        time.sleep(0.1)
    raise AssertionError(f"replication did not catch up: {health(url)}")


def text_of(writer: int, n: int, k: int) -> str:
    return f"writer {writer} batch {n} fact {k} says hello"


async def test_sigkill_under_concurrent_writes_then_restore(s3: S3Server, tmp_path: Path) -> None:
    """Writers hammer a replicated server; it is SIGKILLed; a restore on another directory has
    every batch acknowledged more than the lag bound before the kill, and no batch in part."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/fleet"
    server = ServerProcess(tmp_path / "root1", "--replicate-to", url, "--replica-lag", str(LAG),
                           "--lease-ttl", "3")
    acked: list[tuple[int, int, float]] = []  # (writer, batch, monotonic time of the answer)
    stop = threading.Event()

    def write(writer: int) -> None:
        with Client(server.url, tenant="t1", timeout=10) as client:
            n = 0
            while not stop.is_set():
                try:
                    client.memory.remember_many([
                        {"text": text_of(writer, n, k), "id": f"w{writer}-{n}-{k}"} for k in range(3)])
                except (HmsError, httpx.HTTPError):
                    return
                acked.append((writer, n, time.monotonic()))
                n += 1
                time.sleep(0.005)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(3)]
    try:
        for t in threads:
            t.start()
        await trio.sleep(3.0)
        killed_at = time.monotonic()
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(10)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        server.stop()
    assert len(acked) > 20, server.stderr()
    reports = await restore_from_bucket(url, tmp_path / "root2")
    assert [r.tenant for r in reports] == ["t1"]
    async with Engine.open(tmp_path / "root2" / "t1") as engine:
        memory = engine.memory()
        present = {}
        for writer, n, _ in acked:
            facts = [await memory.get(f"w{writer}-{n}-{k}") for k in range(3)]
            assert len({f is None for f in facts}) == 1, f"batch w{writer}-{n} is half there"
            present[(writer, n)] = facts[0] is not None
            if facts[0] is not None:
                assert [f.text for f in facts if f] == [text_of(writer, n, k) for k in range(3)]
    must = [(w, n) for w, n, at in acked if at < killed_at - LAG]
    missing = [key for key in must if not present[key]]
    print(f"acknowledged {len(acked)} batches, {len(must)} more than {LAG} s before the kill, "
          f"{sum(present.values())} restored, missing {len(missing)}")
    assert must and not missing


def replication(url: str, node: str) -> Replication:
    return Replication(target=parse_target(url), max_lag=0.4, lease_ttl=2.0, node=node,
                       retry_min=0.05, retry_max=0.3, close_timeout=5.0)


async def test_second_node_is_refused_while_the_lease_is_live(s3: S3Server, tmp_path: Path) -> None:
    """While node a holds the lease, node b cannot open a copy of the store for writing
    (StoreLocked naming a); once a closes (releasing it), b can."""
    url = f"s3://{s3.bucket()}/lease"
    async with Engine.open(tmp_path / "a", replicate_to=replication(url, "a")) as engine:
        await engine.put_document("x", "one")
    await restore_from_bucket(url, tmp_path / "b")
    async with Engine.open(tmp_path / "a", replicate_to=replication(url, "a")):
        with pytest.raises(StoreLocked) as raised:
            async with Engine.open(tmp_path / "b", replicate_to=replication(url, "b")):
                pass
        assert "held by a:" in str(raised.value)
    async with Engine.open(tmp_path / "b", replicate_to=replication(url, "b")) as engine:
        await engine.put_document("y", "two")
        assert engine.statistics().replication_state == "ok"


def test_takeover_waits_for_expiry_restores_and_serves(s3: S3Server, tmp_path: Path) -> None:
    """Node b started with --takeover while node a serves: it waits (a keeps renewing); a is
    SIGKILLed; b takes the leases once they expire, restores both tenants and serves them;
    a node started without --takeover refuses a tenant it has no copy of."""
    url = f"s3://{s3.bucket()}/two"
    common = ("--replicate-to", url, "--replica-lag", "0.4", "--lease-ttl", "2")
    a = ServerProcess(tmp_path / "root-a", *common, "--node", "a")
    b = c = None
    try:
        for tenant in ("t1", "t2"):
            with Client(a.url, tenant=tenant) as client:
                for i in range(5):
                    client.memory.remember(f"{tenant} fact {i}", id=f"{tenant}-{i}")
        wait_caught_up(a.url, {"t1", "t2"})
        b = ServerProcess(tmp_path / "root-b", *common, "--node", "b", "--takeover")
        d = ServerProcess(tmp_path / "root-d", *common, "--node", "d", "--takeover")
        time.sleep(3.0)  # longer than the lease: a renews, so b must still be waiting
        assert health(b.url).get("replication", {}).get("tenants") == {}  # type: ignore[union-attr]
        started = time.monotonic()
        assert d.stop() == 0, d.stderr()  # a SIGTERM ends the wait for the lease at once
        assert time.monotonic() - started < 10
        with Client(a.url, tenant="t1") as client:
            client.memory.remember("t1 fact late", id="t1-late")
        wait_caught_up(a.url, {"t1", "t2"})
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(
                health(b.url)["replication"]["tenants"]) < 2:  # type: ignore[index]
            time.sleep(0.2)
        for tenant in ("t1", "t2"):
            with Client(b.url, tenant=tenant) as client:
                for i in range(5):
                    fact = client.memory.get(f"{tenant}-{i}")
                    assert fact is not None and fact.text == f"{tenant} fact {i}"
        with Client(b.url, tenant="t1") as client:
            assert client.memory.get("t1-late") is not None
            client.memory.remember("written on b", id="on-b")
        wait_caught_up(b.url, {"t1", "t2"})
        c = ServerProcess(tmp_path / "root-c", *common, "--node", "c")
        with Client(c.url, tenant="t1") as client, pytest.raises(HmsError) as refused:
            client.memory.get("on-b")
        assert refused.value.code == "conflict"
    finally:
        for proc in (a, b, c):
            if proc is not None:
                proc.stop()
    assert b.stop() == 0, b.stderr()


def test_takeover_now_fences_the_old_node(s3: S3Server, tmp_path: Path) -> None:
    """`--takeover now` takes a live node's lease at once; the old node learns it within a
    renewal and refuses writes from then on (503 store_locked), so the store never forks."""
    url = f"s3://{s3.bucket()}/fence"
    common = ("--replicate-to", url, "--replica-lag", "0.4", "--lease-ttl", "1.5")
    a = ServerProcess(tmp_path / "root-a", *common, "--node", "a")
    b = None
    try:
        with Client(a.url, tenant="t1") as client:
            client.memory.remember("before the takeover", id="f0")
        wait_caught_up(a.url, {"t1"})
        b = ServerProcess(tmp_path / "root-b", *common, "--node", "b", "--takeover", "now")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not health(b.url)["replication"]["tenants"]:  # type: ignore[index]
            time.sleep(0.2)
        time.sleep(1.5)  # a renewal period of a's
        with Client(a.url, tenant="t1") as client, pytest.raises(HmsError) as refused:
            client.memory.remember("after the takeover", id="f1")
        assert refused.value.status == 503 and refused.value.code == "store_locked"
        with Client(b.url, tenant="t1") as client:
            assert client.memory.get("f0") is not None
            client.memory.remember("b writes now", id="f2")
    finally:
        for proc in (a, b):
            if proc is not None:
                proc.stop()
