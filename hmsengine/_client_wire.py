"""What the HTTP clients share: error mapping, request building and answer decoding.

Used by ``hmsengine.client`` (blocking) and its asyncio/trio twin; only the sending differs.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import attrs
import httpx

from .clock import to_ms
from .errors import HmsError, InvalidRequest
from .memory.values import (
    Explanation,
    ForgetReport,
    ForgetScope,
    Page,
    RecallHit,
    RememberInput,
    RememberResult,
)
from .vectormask import VectorMask
from .wire import DecodeError, camel, error_from_body, from_json, to_json

Time = int | _dt.datetime
T = TypeVar("T")
API = "/api/v1"
DEFAULT_TIMEOUT = 60.0


class ServerUnavailable(HmsError, ConnectionError):
    """The server could not be reached, or the connection broke before an answer came."""

    code = "unavailable"
    default_hint = "check that `hms serve` runs at this address, then retry"


class BadResponse(HmsError):
    """The server answered something that is not this API's JSON (a proxy page, a newer server)."""

    code = "bad_response"


def _decode(tp: Any, value: Any) -> Any:
    """A JSON value of the contract as the value ``tp`` describes (``wire.from_json``)."""
    try:
        return from_json(tp, value)
    except DecodeError as exc:
        raise BadResponse(f"an answer that is not this API's {exc}") from None


def _items(tp: type[T], body: Any) -> list[T]:
    if not isinstance(body, dict) or not isinstance(body.get("items"), list):
        raise BadResponse("expected {\"items\": [...]}")
    return [_decode(tp, v) for v in body["items"]]


def _plain(value: Any, field: str) -> Any:
    """A parameter as JSON (``wire.to_json``): tuples and arrays become lists."""
    return to_json(dict(value) if isinstance(value, Mapping) else value)


def _time(value: Time | None, field: str) -> int | None:
    return None if value is None else to_ms(value, field=field)


_TIME_FIELDS = frozenset({"event_time", "valid_from", "valid_to", "as_of", "known_at",
                          "observed_at", "ingested_before", "event_before", "retain_until"})


def _body(**params: Any) -> dict[str, Any]:
    """The camelCase JSON body of a call: times in ms, None left out (the server's default)."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if value is None:
            continue
        out[camel(name)] = _time(value, name) if name in _TIME_FIELDS else _plain(value, name)
    return out


def _input(value: RememberInput | Mapping[str, Any], where: str) -> dict[str, Any]:
    if isinstance(value, RememberInput):
        return _body(**{f.name: getattr(value, f.name) for f in attrs.fields(RememberInput)})
    if isinstance(value, Mapping):
        known = {f.name for f in attrs.fields(RememberInput)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise InvalidRequest(f"{where}{unknown[0]}: unknown field")
        return _body(**value)
    raise InvalidRequest(f"{where.rstrip('.') or 'input'}: expected a RememberInput or a dict")


def _scope(scope: ForgetScope) -> dict[str, Any]:
    if not isinstance(scope, ForgetScope):
        raise InvalidRequest("scope: expected a ForgetScope (ForgetScope.ids([...]), ...)")
    value = scope.value
    if scope.kind in _TIME_FIELDS:
        value = _time(value, f"scope.{scope.kind}")
    return {camel(scope.kind): _plain(value, "scope")}


def _doc_path(doc_id: str) -> str:
    if not isinstance(doc_id, str):
        raise InvalidRequest(f"id: expected a string, got {type(doc_id).__name__}")
    # Every byte but unreserved ones escaped, dots too: "." and ".." must stay ids, not
    # path segments that a URL normaliser would remove.
    return f"{API}/documents/" + quote(doc_id, safe="").replace(".", "%2E")


_RAISE: Any = object()  # _Call.missing: a 404 raises NotFound


@attrs.frozen
class _Call:
    """One request and how to read its answer: the protocol, shared by both clients."""

    method: str
    path: str
    body: Any = None
    params: dict[str, str] | None = None
    # A 404 answer is this value instead of NotFound (get of an unknown id: None).
    missing: Any = _RAISE
    decode: Any = None  # callable(body) -> value
    # The JSON contract as it is (``memory.call(op, body)``): never masked.
    raw: bool = False
    # The vector mask whose inverse the answer's embeddings go through (see ``masked``).
    unmask: VectorMask | None = None

    def masked(self, mask: VectorMask | None) -> _Call:
        """This call with the embeddings it sends masked by ``mask`` and those of its answer
        unmasked (``hmsengine.vectormask``); itself without a mask or for a raw call."""
        if mask is None or self.raw:
            return self
        return attrs.evolve(self, body=_mask_body(self.body, mask), unmask=mask)

    def result(self, response: httpx.Response) -> Any:
        try:
            body = response.json() if response.content else None
        except (ValueError, UnicodeDecodeError):
            body = None
        if response.status_code == 404 and self.missing is not _RAISE \
                and isinstance(body, dict) and body.get("error", {}).get("code") == "not_found":
            return self.missing
        if response.status_code >= 400:
            raise error_from_body(response.status_code, body)
        if not isinstance(body, dict):
            raise BadResponse(f"HTTP {response.status_code} without a JSON object")
        if self.unmask is not None:
            body = _unmask_answer(body, self.unmask)
        return self.decode(body) if self.decode is not None else body


def _mask_body(body: Any, mask: VectorMask) -> Any:
    """A request body with its ``embedding`` (remember, recall, explain, document put and
    search) and its ``inputs[i].embedding`` (rememberMany) masked; nothing else is touched
    (the caller's metadata may hold a key named embedding)."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    if out.get("embedding") is not None:
        out["embedding"] = list(mask.mask(out["embedding"], "embedding"))
    inputs = out.get("inputs")
    if isinstance(inputs, list):
        out["inputs"] = [
            {**item, "embedding": list(mask.mask(item["embedding"], f"inputs[{n}].embedding"))}
            if isinstance(item, dict) and item.get("embedding") is not None else item
            for n, item in enumerate(inputs)]
    return out


def _unmask_value(value: Any, mask: VectorMask) -> Any:
    """A fact's or document's JSON with its embedding unmasked (anything else as it is)."""
    if isinstance(value, dict) and "text" in value and isinstance(value.get("embedding"), list):
        try:
            return {**value, "embedding": list(mask.unmask(value["embedding"]))}
        except InvalidRequest as exc:
            raise BadResponse(f"an answer's embedding cannot be unmasked: {exc.message}") from None
    return value


def _unmask_answer(body: dict[str, Any], mask: VectorMask) -> dict[str, Any]:
    """An answer with the embeddings of its facts and documents unmasked: the body itself (get,
    a document), its ``items`` (history) or their ``fact`` (recall)."""
    items = body.get("items")
    if not isinstance(items, list):
        return _unmask_value(body, mask)  # type: ignore[no-any-return]
    return {**body, "items": [
        {**item, "fact": _unmask_value(item["fact"], mask)}
        if isinstance(item, dict) and "fact" in item else _unmask_value(item, mask)
        for item in items]}


def _value(tp: type[T]) -> Any:
    return lambda body: _decode(tp, body)


def _list(tp: type[T]) -> Any:
    return lambda body: _items(tp, body)


# -- the calls, once --------------------------------------------------------------------------

class _MemoryCalls:
    """Builds the memory calls; the sync and async faces below send them."""

    @staticmethod
    def op(op: str, body: Any, decode: Any = None, missing: Any = _RAISE, *,
           raw: bool = False) -> _Call:
        return _Call("POST", f"{API}/memory/{quote(op, safe='')}", body, missing=missing,
                     decode=decode, raw=raw)

    def remember(self, text: str, **fields: Any) -> _Call:
        return self.op("remember", _input({"text": text, **fields}, ""), _value(RememberResult))

    def remember_many(self, inputs: Sequence[RememberInput | Mapping[str, Any]]) -> _Call:
        if isinstance(inputs, (str, bytes, Mapping)) or not isinstance(inputs, Sequence):
            raise InvalidRequest("inputs: expected a list of RememberInput")
        return self.op("rememberMany",
                       {"inputs": [_input(v, f"inputs[{i}].") for i, v in enumerate(inputs)]},
                       _list(RememberResult))

    def recall(self, query: str, **options: Any) -> _Call:
        return self.op("recall", {"query": query, **_body(**options)}, _list(RecallHit))

    def explain(self, query: str, id: str, **options: Any) -> _Call:
        return self.op("explain", {"query": query, "id": id, **_body(**options)},
                       _value(Explanation))


    def list(self, **filters: Any) -> _Call:
        return self.op("list", _body(**filters), _value(Page))

    def count(self, **filters: Any) -> _Call:
        return self.op("count", _body(**filters), _count)

    def apply_retention(self, *, dry_run: bool, purge: bool) -> _Call:
        return self.op("applyRetention", {"dryRun": dry_run, "purge": purge}, _value(ForgetReport))

    def set_retention(self, namespace: str, keep_for: Any) -> _Call:
        if isinstance(keep_for, _dt.timedelta):
            keep_for = int(keep_for.total_seconds() * 1000)
        return self.op("setRetention", {"namespace": namespace, "keepForMs": keep_for},
                       lambda body: dict(body.get("retention", {})))


def _count(body: Any) -> int:
    count = body.get("count") if isinstance(body, dict) else None
    if isinstance(count, bool) or not isinstance(count, int):
        raise BadResponse("expected {\"count\": N}")
    return count


_CALLS = _MemoryCalls()


# -- the synchronous client -------------------------------------------------------------------

def _search_body(query: str, k: int, embedding: Any, ids: Any, metadata: Any, semantic: Any,
                 lexical_weight: float, semantic_weight: float) -> dict[str, Any]:
    return {"query": query, **_body(k=k, embedding=embedding, ids=ids, metadata=metadata,
                                    semantic=semantic, lexical_weight=lexical_weight,
                                    semantic_weight=semantic_weight)}


def _headers(api_key: str | None, tenant: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    if tenant is not None:
        headers["X-HMS-Tenant"] = tenant
    return headers


def _content(call: _Call) -> bytes | None:
    if call.body is None:
        return None
    return json.dumps(call.body, ensure_ascii=False, allow_nan=False).encode("utf-8")
