"""The TypeScript client (clients/typescript) is typed from the /openapi.json this server publishes.

`make client-types` fetches /openapi.json from a real ``hms serve``, saves it as
``src/generated/openapi.json`` and generates ``src/generated/openapi.ts`` from it with
openapi-typescript (its header names the saved file's sha256), then builds ``dist/``. These tests
need no npm: they compare the saved document with the live one, and the headers with the saved
file, so the types cannot drift from the server. ``npm run check`` (run by ``make test`` once
``npm ci`` succeeds) regenerates the types from the saved document and compares them byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
from serverproc import ServerProcess

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
SPEC = PACKAGE / "src" / "generated" / "openapi.json"
TYPES = (PACKAGE / "src" / "generated" / "openapi.ts", PACKAGE / "dist" / "generated" / "openapi.d.ts")
REGENERATE = "make client-types"


def _drift(saved: dict[str, Any], live: dict[str, Any]) -> str:
    """What differs, by path and by schema name."""
    changes = []
    for section, old, new in (
        ("paths", saved.get("paths", {}), live.get("paths", {})),
        ("schemas", saved.get("components", {}).get("schemas", {}),
         live.get("components", {}).get("schemas", {})),
    ):
        for name in sorted(set(old) | set(new)):
            if old.get(name) != new.get(name):
                what = "added" if name not in old else "removed" if name not in new else "changed"
                changes.append(f"{section} {name} {what}")
    changes += [f"{key} changed" for key in sorted(set(saved) | set(live))
                if key not in ("paths", "components") and saved.get(key) != live.get(key)]
    if saved.get("components", {}).get("securitySchemes") != live.get("components", {}).get(
            "securitySchemes"):
        changes.append("securitySchemes changed")
    shown = "; ".join(changes[:10]) + (f"; and {len(changes) - 10} more" if len(changes) > 10 else "")
    return (f"clients/typescript's types are out of date with the server's /openapi.json ({shown}): "
            f"run `{REGENERATE}` and commit clients/typescript")


def test_saved_openapi_is_the_servers_current_document(server: ServerProcess) -> None:
    """The document the TypeScript types were generated from equals the live /openapi.json."""
    live = httpx.get(server.url + "/openapi.json", timeout=30).json()
    saved = json.loads(SPEC.read_text(encoding="utf-8"))
    assert saved == live, _drift(saved, live)


def test_generated_types_and_build_name_the_saved_document() -> None:
    """openapi.ts and its build dist/generated/openapi.d.ts were made from the saved openapi.json
    (their header names its sha256): neither was left behind when the document changed."""
    digest = hashlib.sha256(SPEC.read_bytes()).hexdigest()
    for path in TYPES:
        header = path.read_text(encoding="utf-8")[:400]
        assert f"sha256 {digest}" in header, (
            f"{path.relative_to(PACKAGE)} was not generated from src/generated/openapi.json "
            f"(its header: {header.splitlines()[0]!r}): run `{REGENERATE}` and commit clients/typescript")


def test_drift_message_names_what_changed_and_the_command() -> None:
    """A drift is reported by route and schema, with the one command that repairs it."""
    saved = json.loads(SPEC.read_text(encoding="utf-8"))
    live = json.loads(json.dumps(saved))
    live["paths"]["/api/v1/not-a-route-yet"] = {"get": {}}
    live["components"]["schemas"]["Fact"]["properties"]["someNewField"] = {"type": "integer"}
    del live["components"]["schemas"]["Hit"]
    message = _drift(saved, live)
    assert "paths /api/v1/not-a-route-yet added" in message
    assert "schemas Fact changed" in message and "schemas Hit removed" in message
    assert message.endswith("run `make client-types` and commit clients/typescript")
