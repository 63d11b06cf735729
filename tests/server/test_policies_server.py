"""A tenant's store keeps its memory policies (issue 23, item 8): ``hms serve`` applies a tenant
store's record over ``--memory-config``'s, and records ``--memory-config``'s in a new one."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from serverproc import ServerProcess, write_json

from hmsengine.cli import main
from hmsengine.memory.stored_policies import SECTION

LISBON = 1_704_067_200_000  # 2024-01-01
PORTO = 1_748_736_000_000  # 2025-06-01


def test_a_server_tenant_applies_its_stores_record(tmp_path: Path) -> None:
    """hms serve applies a tenant store's recorded policies over --memory-config's, and records
    --memory-config's in a tenant store that has none."""
    root = tmp_path / "root"
    assert main(["init", "--store", str(root / "kept"), "--supersession", "none"]) == 0
    config = write_json(tmp_path / "config.json", {"supersession": "latest-by-subject"})
    server = ServerProcess(root, "--memory-config", str(config))
    try:
        for tenant in ("kept", "fresh"):
            for text, when in (("Carol lives in Lisbon", LISBON), ("Carol lives in Porto", PORTO)):
                r = httpx.post(server.url + "/api/v1/memory/remember", headers={
                    "X-HMS-Tenant": tenant}, json={"text": text, "subject": "carol/city",
                                                   "validFrom": when})
                assert r.status_code == 200, r.text
        hits = {t: httpx.post(server.url + "/api/v1/memory/recall", headers={"X-HMS-Tenant": t},
                              json={"query": "Carol lives"}).json()["items"]
                for t in ("kept", "fresh")}
    finally:
        assert server.stop() == 0
    assert len(hits["kept"]) == 2  # its record says none: both current
    assert [h["fact"]["text"] for h in hits["fresh"]] == ["Carol lives in Porto"]
    record = json.loads((root / "fresh" / "format.json").read_text())["settings"][SECTION]
    assert record["supersession"] == "latest-by-subject"
