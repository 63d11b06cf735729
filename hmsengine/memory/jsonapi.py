"""The JSON contract: ``memory.call(op, body) -> dict`` for every memory operation.

camelCase field names, unknown fields rejected (``InvalidRequest``), times as integer ms.
``op`` is the Python method name in camelCase. Results are the camelCase form of the Python
values; a list result is wrapped as ``{"items": [...]}``. ``get`` of an unknown id is
``NotFound`` here (a JSON response is always an object), while the Python method returns None.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from ..engine import check_unicode
from ..errors import HmsError, InvalidRequest, NotFound
from ..wire import camel, snake, to_json
from . import browse, files, forget, loader, recall, remember, retention
from .core import MemoryCore
from .values import SCOPE_KINDS, ForgetScope, RememberInput

# The integer fields of the contract. JSON has one number type: 582.0 is the integer 582, as JSON
# Schema (and so the OpenAPI document) says; a number with a fraction is refused by the checks.
INTEGER_FIELDS = frozenset({"k", "candidateLimit", "asOf", "knownAt", "eventTime", "validFrom",
                            "validTo", "observedAt", "chunkChars", "budgetChars", "byteRange",
                            "ingestedBefore", "eventBefore", "retainUntil", "limit",
                            "keepForMs"})
# Integers past float64's exact range are refused by the checks anyway: never rounded into one.
_EXACT = 2 ** 53


def whole(value: Any) -> Any:
    """``value`` with a float that holds an integer (582.0) as that integer, in lists too."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT:
        return int(value)
    if isinstance(value, list):
        return [whole(v) for v in value]
    return value


def _fields(body: object, op: str, allowed: set[str], required: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(body, Mapping):
        raise InvalidRequest(f"{op}: the body must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: unknown field for {op}",
                             hint=f"known: {', '.join(sorted(allowed))}")
    for name in required:
        if name not in body:
            raise InvalidRequest(f"{name}: required for {op}")
    return {snake(k): whole(v) if k in INTEGER_FIELDS else v for k, v in body.items()}


_REMEMBER = {camel(f.name) for f in attrs.fields(RememberInput)}
_RECALL = {"query", "k", "asOf", "knownAt", "history", "subject", "entity", "namespace", "kinds",
           "embedding", "candidateLimit", "explain"}


def _input(body: object, where: str) -> RememberInput:
    fields = _fields(body, where, _REMEMBER, ("text",))
    for key in ("entities", "supersedes", "sources"):
        if key in fields and isinstance(fields[key], list):
            fields[key] = tuple(fields[key])
    return RememberInput(**fields)


def _recall_options(fields: dict[str, Any]) -> dict[str, Any]:
    kinds = fields.get("kinds")
    if isinstance(kinds, list):
        fields["kinds"] = tuple(kinds)
    return fields


def _scope(value: object) -> ForgetScope:
    if not isinstance(value, Mapping) or len(value) != 1:
        raise InvalidRequest("scope: expected an object with exactly one key of "
                             + ", ".join(camel(k) for k in SCOPE_KINDS))
    ((key, arg),) = value.items()
    kind = snake(key)
    if kind not in SCOPE_KINDS:
        raise InvalidRequest(f"scope.{key}: unknown scope")
    constructor: Callable[[Any], ForgetScope] = getattr(ForgetScope, kind)
    return constructor(whole(arg) if key in INTEGER_FIELDS else arg)


async def _remember(m: MemoryCore, body: Any) -> Any:
    return to_json((await remember.remember_many(m, [_input(body, "remember")]))[0])


async def _remember_many(m: MemoryCore, body: Any) -> Any:
    fields = _fields(body, "rememberMany", {"inputs"}, ("inputs",))
    if not isinstance(fields["inputs"], list):
        raise InvalidRequest("inputs: expected a list")
    items = [_input(v, f"inputs[{i}]") for i, v in enumerate(fields["inputs"])]
    return {"items": to_json(await remember.remember_many(m, items))}


async def _recall(m: MemoryCore, body: Any) -> Any:
    fields = _recall_options(_fields(body, "recall", _RECALL, ("query",)))
    query = fields.pop("query")
    return {"items": to_json(await recall.recall(m, query, recall.RecallOptions(**fields)))}


async def _explain(m: MemoryCore, body: Any) -> Any:
    fields = _recall_options(_fields(body, "explain", (_RECALL - {"explain"}) | {"id"}, ("query", "id")))
    query, doc_id = fields.pop("query"), fields.pop("id")
    return to_json(await recall.explain(m, query, doc_id, recall.RecallOptions(**fields)))


async def _forget(m: MemoryCore, body: Any) -> Any:
    fields = _fields(body, "forget", {"scope", "includeChain", "dryRun", "purge"}, ("scope",))
    scope = _scope(fields.pop("scope"))
    return to_json(await forget.forget(m, scope, include_chain=fields.get("include_chain", False),
                                       dry_run=fields.get("dry_run", False),
                                       purge=fields.get("purge", False)))


async def _history(m: MemoryCore, body: Any) -> Any:
    fields = _fields(body, "history", {"id"}, ("id",))
    return {"items": to_json(await m.history(fields["id"]))}


async def _get(m: MemoryCore, body: Any) -> Any:
    fields = _fields(body, "get", {"id"}, ("id",))
    fact = await m.get(fields["id"])
    if fact is None:
        raise NotFound(f"no fact {fields['id']!r}")
    return to_json(fact)


async def _apply_forgetting(m: MemoryCore, body: Any) -> Any:
    return to_json(await forget.apply_forgetting(m, **_fields(body, "applyForgetting", {"dryRun"})))


async def _consolidate(m: MemoryCore, body: Any) -> Any:
    fields = _fields(body, "consolidate", {"dryRun", "allowDestructive"})
    return to_json(await forget.consolidate(m, **fields))


async def _load(m: MemoryCore, body: Any) -> Any:
    # An extractor is a callable and cannot travel over JSON: a load over JSON stores the
    # episodes only ("extractor" is an unknown field like any other).
    fields = _fields(body, "load", {"document", "text", "namespace", "actor", "observedAt",
                                    "chunkChars"}, ("document", "text"))
    document, text = fields.pop("document"), fields.pop("text")
    return to_json(await loader.load(m, document, text, **fields))


async def _capture(m: MemoryCore, body: Any) -> Any:
    # capture requires an extractor, which cannot travel over JSON: refused, whatever the body.
    raise InvalidRequest("capture: needs an extractor, which a JSON call cannot carry",
                         hint="extract the facts yourself and call rememberMany, or load a "
                              "document without an extractor")


def _file_access(m: MemoryCore, op: str) -> None:
    # Over JSON the caller is another process or machine: reading this host's files is allowed
    # only inside the directory the operator configured (MemoryConfig.file_base).
    if m.config.file_base is None:
        raise InvalidRequest(f"{op}: file access over the JSON contract needs MemoryConfig.fileBase",
                             hint="start the server with a --memory-config that sets fileBase")


async def _remember_file(m: MemoryCore, body: Any) -> Any:
    allowed = {"uri", "byteRange", "format", "summary"} | (_REMEMBER - {"text"})
    fields = _fields(body, "rememberFile", allowed, ("uri",))
    _file_access(m, "rememberFile")
    uri = fields.pop("uri")
    byte_range = fields.pop("byte_range", None)
    if isinstance(byte_range, list):
        byte_range = tuple(byte_range)
    return to_json(await files.remember_file(m, uri, byte_range=byte_range,
                                              format=fields.pop("format", None),
                                              summary=fields.pop("summary", None), fields=fields))


async def _hydrate(m: MemoryCore, body: Any) -> Any:
    fields = _fields(body, "hydrate", {"id"}, ("id",))
    _file_access(m, "hydrate")
    data = await files.hydrate(m, fields["id"])
    return {"id": fields["id"], "length": len(data), "base64": base64.b64encode(data).decode("ascii")}


_LIST = {"namespace", "subject", "entity", "kind", "status", "metadata", "asOf", "knownAt"}


def _list_filters(fields: dict[str, Any]) -> dict[str, Any]:
    for key in ("kind", "status"):
        if isinstance(fields.get(key), list):
            fields[key] = tuple(fields[key])
    return fields


async def _list(m: MemoryCore, body: Any) -> Any:
    fields = _list_filters(_fields(body, "list", _LIST | {"limit", "cursor"}))
    return to_json(await browse.list_facts(m, **fields))


async def _count(m: MemoryCore, body: Any) -> Any:
    return {"count": await browse.count_facts(m, **_list_filters(_fields(body, "count", _LIST)))}


async def _apply_retention(m: MemoryCore, body: Any) -> Any:
    fields = _fields(body, "applyRetention", {"dryRun", "purge"})
    return to_json(await retention.apply_retention(
        m, dry_run=fields.get("dry_run", True), purge=fields.get("purge", False)))


async def _set_retention(m: MemoryCore, body: Any) -> Any:
    fields = _fields(body, "setRetention", {"namespace", "keepForMs"}, ("namespace", "keepForMs"))
    await retention.set_retention(m, fields["namespace"], fields["keep_for_ms"])
    return {"retention": dict(m.index.retention)}


async def _profile(m: MemoryCore, body: Any) -> Any:
    return to_json(await loader.profile(m, **_fields(body, "profile", {"namespace", "budgetChars"})))


OPERATIONS: dict[str, Callable[[MemoryCore, Any], Awaitable[Any]]] = {
    "remember": _remember, "rememberMany": _remember_many, "recall": _recall,
    "explain": _explain, "forget": _forget, "history": _history, "get": _get,
    "applyForgetting": _apply_forgetting, "consolidate": _consolidate,
    "load": _load, "capture": _capture, "profile": _profile,
    "rememberFile": _remember_file, "hydrate": _hydrate,
    "list": _list, "count": _count, "applyRetention": _apply_retention,
    "setRetention": _set_retention,
}


# The contract's field names that Python spells otherwise (valid_to), as error messages name them.
WIRE_NAMES = {name: camel(name) for name in (
    *(f.name for f in attrs.fields(RememberInput)), *(snake(k) for k in _RECALL),
    *(snake(k) for k in INTEGER_FIELDS), *SCOPE_KINDS, "include_chain", "dry_run",
    "allow_destructive", "lexical_weight", "semantic_weight", "max_bytes") if "_" in name}
WIRE_NAMES["keep_for"] = "keepForMs"  # setRetention's duration is in ms on the wire
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*"')
_SNAKE_WORD = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")


def wire_text(text: str) -> str:
    """``text`` with the contract's Python field names in their wire form (``valid_to`` ->
    ``validTo``), leaving quoted values (``'my_id'``) as they are."""
    out, last = [], 0
    for quoted in _QUOTED.finditer(text):
        out.append(_SNAKE_WORD.sub(lambda m: WIRE_NAMES.get(m[0], m[0]), text[last:quoted.start()]))
        out.append(quoted[0])
        last = quoted.end()
    out.append(_SNAKE_WORD.sub(lambda m: WIRE_NAMES.get(m[0], m[0]), text[last:]))
    return "".join(out)


def wire_error(exc: HmsError) -> HmsError:
    """``exc`` with its message and hint naming fields as the JSON contract does (camelCase)."""
    message, hint = wire_text(exc.message), wire_text(exc.hint) if exc.hint else exc.hint
    if (message, hint) != (exc.message, exc.hint):
        exc.message, exc.hint = message, hint
        exc.args = (message, *exc.args[1:])
    return exc


async def call(core: MemoryCore, op: str, body: dict[str, Any]) -> dict[str, Any]:
    """``Memory.call``: run ``op`` with the JSON ``body``; the JSON result (module docstring)."""
    handler = OPERATIONS.get(op) if isinstance(op, str) else None
    if handler is None:
        raise InvalidRequest(f"op: unknown operation {op!r}",
                             hint=f"one of {', '.join(sorted(OPERATIONS))}")
    body = body if body is not None else {}
    try:
        check_unicode(body, "")  # a lone surrogate anywhere is InvalidRequest, whatever the field
        result = await handler(core, body)
    except HmsError as exc:
        wire_error(exc)
        raise
    assert isinstance(result, dict)
    return result
