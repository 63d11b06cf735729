"""The wire forms shared by every edge: values as JSON and back, and errors as HTTP statuses.

One cattrs converter (``WIRE``) defines the JSON form of every public value: an attrs value is
an object with its field names in camelCase, tuples are lists, numpy arrays and scalars plain
numbers. The JSON contract (``memory.call``), the server's document routes and the MCP tools
render with it; the HTTP client reads the answers back into the same attrs values with it. The
CLI's ``--json`` output is the same form with the attribute names as they are (``PLAIN``).
Requests are not read with it: the JSON contract checks its inputs field by field with messages
that name the field (memory/jsonapi.py, then the memory layer's own validation); a converter
would coerce (a number into a string) where the contract must refuse.

``ERRORS`` is the one table of error classes: code, HTTP status, and the fixed message the
server sends instead of the error's own when that names server-side details (paths, files).
The server maps an ``HmsError`` to its status with it (``http_status``); the client maps an
error body back to the same class with it (``error_from_body``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import cattrs
import numpy as np
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from .errors import (
    Conflict,
    CorruptStore,
    DurabilityError,
    EngineClosed,
    Forbidden,
    HmsError,
    IncompatibleStore,
    InvalidRequest,
    InvalidTenant,
    NotFound,
    PolicyError,
    ProvenanceError,
    ReplicaUnavailable,
    StoreLocked,
    Unauthorized,
    WrongKey,
)

T = TypeVar("T")


def camel(name: str) -> str:
    """``valid_from`` -> ``validFrom``: a Python name as the JSON contract spells it."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def snake(name: str) -> str:
    """``validFrom`` -> ``valid_from``: a JSON contract name as Python spells it."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _converter(rename: Callable[[str], str]) -> cattrs.Converter:
    converter = cattrs.Converter()

    def renamed(cls: type) -> dict[str, Any]:
        return {a.name: override(rename=rename(a.name)) for a in attrs.fields(cls)}

    def unstructure_attrs(cls: type) -> Any:
        return make_dict_unstructure_fn(cls, converter, **renamed(cls))

    def structure_attrs(cls: type) -> Any:
        return make_dict_structure_fn(cls, converter, **renamed(cls))

    converter.register_unstructure_hook_factory(attrs.has, unstructure_attrs)
    converter.register_structure_hook_factory(attrs.has, structure_attrs)
    converter.register_unstructure_hook(np.ndarray, lambda a: a.tolist())
    converter.register_unstructure_hook(np.generic, lambda a: a.item())
    return converter


#: The JSON contract's converter: camelCase names.
WIRE = _converter(camel)
#: The CLI's ``--json`` form: the attribute names as they are.
PLAIN = _converter(lambda name: name)


def to_json(value: Any) -> Any:
    """The JSON contract's form of a value (attrs values, lists, tuples, dicts, scalars)."""
    return WIRE.unstructure(value)


class DecodeError(Exception):
    """A JSON value that does not describe the type asked for (the client's ``BadResponse``)."""


def from_json(tp: type[T] | Any, value: Any) -> T:
    """``value`` (the JSON contract's form) as ``tp``; keys it does not know are ignored (a
    newer server may add fields). ``DecodeError`` when it does not fit."""
    try:
        result: T = WIRE.structure(value, tp)
    except Exception as exc:  # cattrs' validation errors (exception groups among them)
        details = cattrs.transform_error(exc) if isinstance(exc, cattrs.BaseValidationError) \
            else [str(exc)]
        raise DecodeError(f"{getattr(tp, '__name__', tp)}: {'; '.join(details)}") from None
    return result


# -- errors ----------------------------------------------------------------------------------

#: Error class -> (HTTP status, message sent: None = the error's own, else this fixed one).
#: A subclass must come before its base (the first match wins).
ERRORS: tuple[tuple[type[HmsError], int, str | None], ...] = (
    (InvalidTenant, 400, None),
    (Unauthorized, 401, None),
    (Forbidden, 403, None),
    (InvalidRequest, 422, None),
    (NotFound, 404, None),
    (Conflict, 409, None),
    (ProvenanceError, 409, None),
    (StoreLocked, 503, "the tenant's store is locked by another process or node"),
    (ReplicaUnavailable, 503, "the tenant's replica bucket cannot be reached; see the server log"),
    (EngineClosed, 503, "the server is shutting down"),
    (DurabilityError, 503, "the tenant's store refuses writes after an I/O error; see the log"),
    (CorruptStore, 500, "the tenant's store is damaged; see the server log"),
    (WrongKey, 500, "the tenant's store cannot be opened; see the server log"),
    (IncompatibleStore, 500, "the tenant's store has a newer format; see the server log"),
    (PolicyError, 500, "a memory policy of the server failed; see the server log"),
)
_BY_CODE: dict[str, type[HmsError]] = {cls.code: cls for cls, _, _ in ERRORS}
#: Statuses of refusals before any operation ran (bad JSON, a body too large or too slow):
#: their codes are the transport's own, and the client raises them as InvalidRequest.
REQUEST_STATUSES = (400, 408, 413, 422)


def http_status(exc: HmsError) -> tuple[int, str | None] | None:
    """(HTTP status, fixed message or None) of an error, or None for a class not in ERRORS."""
    for cls, status, fixed in ERRORS:
        if isinstance(exc, cls):
            return status, fixed
    return None


def error_body(code: str, message: str, hint: str | None = None) -> dict[str, Any]:
    """The error answer of the JSON contract: ``{"error": {"code", "message"[, "hint"]}}``."""
    body: dict[str, str] = {"code": code, "message": message}
    if hint:
        body["hint"] = hint
    return {"error": body}


def error_from_body(status: int, body: Any) -> HmsError:
    """The HmsError an error answer stands for, with ``.status`` and the server's ``.code``:
    the class of its code in ERRORS, else InvalidRequest for a refused request, else HmsError."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code, message = error["code"], str(error.get("message", ""))
        hint = error.get("hint") if isinstance(error.get("hint"), str) else None
    else:
        code, message, hint = "http_error", f"HTTP {status} without an error body", None
    cls = _BY_CODE.get(code) or (InvalidRequest if status in REQUEST_STATUSES else HmsError)
    exc = ProvenanceError(message, reason=code, hint=hint) if cls is ProvenanceError \
        else cls(message, hint=hint)
    if exc.code != code:
        exc.code = code  # type: ignore[misc]  # the server's code on this instance
    exc.status = status  # type: ignore[attr-defined]
    return exc


__all__ = ["ERRORS", "PLAIN", "WIRE", "DecodeError", "camel", "error_body", "error_from_body",
           "from_json", "http_status", "snake", "to_json"]
