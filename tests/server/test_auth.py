"""API keys: bearer keys per tenant, hashed in the keys file, compared in constant time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serverproc import ServerProcess, raw_http, request_bytes, run_serve, tenant_dirs, write_json

from hmsengine import InvalidRequest
from hmsengine.client import Client
from hmsengine.errors import Forbidden, Unauthorized
from hmsengine.server.auth import KeyRing, hash_key

KEY_A = "alpha-key-0123456789abcdef"
KEY_B = "beta-key-fedcba9876543210"
RECALL = "/api/v1/memory/recall"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with --api-keys: alpha and beta each with their key, gamma with none."""
    base = tmp_path_factory.mktemp("auth")
    keys = write_json(base / "keys.json", {"alpha": [hash_key(KEY_A)],
                                           "beta": [hash_key(KEY_B).upper()], "gamma": []})
    proc = ServerProcess(base / "root", "--api-keys", str(keys))
    yield proc
    assert proc.stop() == 0, proc.stderr()


class _Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status_code, self.headers, self.text = status, headers, body.decode()

    def json(self) -> dict:
        return json.loads(self.text)


def _post(url: str, tenant: str, *authorization: str) -> _Answer:
    """POST /recall with these exact Authorization header lines (sent raw: httpx refuses some)."""
    headers = [("X-HMS-Tenant", tenant)] + [("Authorization", a) for a in authorization]
    return _Answer(*raw_http(url, request_bytes("POST", RECALL, headers, b'{"query": "x"}')))


@pytest.mark.parametrize("authorization", [
    (),                                # no header
    ("Bearer wrong",),                 # a key nobody has
    (KEY_A,),                          # the bare key, no scheme
    ("Bearer ",),                      # the scheme with an empty key
    ("Bearer",),                       # the scheme alone
    (f"Bearer {KEY_A}x",),             # the right key with a suffix
    (f"Bearer {KEY_A[:-1]}",),         # the right key less its last character
    (f"Bearer  {KEY_A}",),             # two spaces
    (f"Basic {KEY_A}",),               # another scheme
    (f"Bearer {KEY_A}", f"Bearer {KEY_A}"),  # two Authorization headers
])
def test_malformed_or_unknown_keys_are_401(keyed: ServerProcess, authorization) -> None:
    """Missing, malformed, unknown, truncated or extended keys are 401 with WWW-Authenticate."""
    r = _post(keyed.url, "alpha", *authorization)
    assert r.status_code == 401, r.text
    assert r.json()["error"]["code"] == "unauthorized"
    assert r.headers["www-authenticate"] == "Bearer"


def test_right_key_passes_and_scheme_is_case_insensitive(keyed: ServerProcess) -> None:
    """The tenant's own key is accepted (also as 'bearer'); stored hashes may be upper case."""
    assert _post(keyed.url, "alpha", f"Bearer {KEY_A}").status_code == 200
    assert _post(keyed.url, "alpha", f"bearer {KEY_A}").status_code == 200
    assert _post(keyed.url, "beta", f"Bearer {KEY_B}").status_code == 200


def test_key_of_another_tenant_is_403(keyed: ServerProcess) -> None:
    """The right key for another tenant is 403, also for a tenant that has no keys at all;
    nothing is opened or created for the refused tenant."""
    before = tenant_dirs(keyed.root)
    for tenant, key in (("alpha", KEY_B), ("beta", KEY_A), ("gamma", KEY_A)):
        r = _post(keyed.url, tenant, f"Bearer {key}")
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    r = _post(keyed.url, "delta", "Bearer wrong")
    assert r.status_code == 401
    assert tenant_dirs(keyed.root) - before <= {"alpha", "beta"}
    assert "gamma" not in tenant_dirs(keyed.root) and "delta" not in tenant_dirs(keyed.root)


def test_client_raises_auth_errors_with_status(keyed: ServerProcess) -> None:
    """Client raises Unauthorized (401) and Forbidden (403) and works with the right key."""
    with Client(keyed.url, api_key=KEY_A, tenant="alpha") as ok:
        assert ok.memory.remember("alpha's fact").created
    with Client(keyed.url, api_key="wrong", tenant="alpha") as bad, \
            pytest.raises(Unauthorized) as refused:
        bad.memory.recall("x")
    assert refused.value.status == 401
    with Client(keyed.url, api_key=KEY_B, tenant="alpha") as other, \
            pytest.raises(Forbidden) as forbidden:
        other.documents.get("x")
    assert forbidden.value.status == 403


def test_health_and_schema_need_no_key(keyed: ServerProcess) -> None:
    """/healthz and /openapi.json answer without a key; the data routes do not."""
    assert httpx.get(keyed.url + "/healthz").status_code == 200
    assert httpx.get(keyed.url + "/openapi.json").status_code == 200
    assert httpx.get(keyed.url + "/api/v1/documents/x").status_code == 401


def test_keys_file_is_validated() -> None:
    """A keys file with raw keys, bad tenant names or a wrong shape is refused, naming the entry."""
    with pytest.raises(InvalidRequest, match=r"alpha\[0\]"):
        KeyRing.from_json({"alpha": [KEY_A]})
    with pytest.raises(InvalidRequest, match="not a valid tenant"):
        KeyRing.from_json({"../x": [hash_key(KEY_A)]})
    with pytest.raises(InvalidRequest):
        KeyRing.from_json([hash_key(KEY_A)])
    with pytest.raises(InvalidRequest):
        KeyRing.from_json({"alpha": hash_key(KEY_A)})
    ring = KeyRing.from_json({"alpha": [hash_key(KEY_A)]})
    ring.check("alpha", [f"Bearer {KEY_A}"])
    with pytest.raises(Unauthorized):
        ring.check("alpha", [f"Bearer {KEY_A}\u00e9"])


def test_bad_keys_file_stops_the_server(tmp_path: Path) -> None:
    """hms serve refuses to start on an unreadable or malformed keys file (exit 2)."""
    bad = write_json(tmp_path / "keys.json", {"alpha": ["not-a-hash"]})
    done = run_serve("--root", str(tmp_path / "root"), "--port", "0", "--api-keys", str(bad))
    assert done.returncode == 2 and "alpha[0]" in done.stderr
    assert not (tmp_path / "root").exists()
