"""The server's OpenAPI 3.1 document: every route with its request and response schemas.

The schemas are JSON Schema 2020-12 (OpenAPI 3.1's dialect), written by hand from the JSON
contract (memory/jsonapi.py) and the values (memory/values.py, engine/values.py). Response
schemas forbid unknown properties, so a value that grows a field without its schema here fails
the fuzz test (tests/server/test_fuzz.py), which validates every response against this document.
Requests are described as precisely as JSON Schema allows; what it cannot say (byte limits, ids
that must exist, a valid_to after valid_from) the server answers with 422.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from ..clock import MAX_MS, MIN_MS
from ..memory.config import KINDS
from ..memory.files import MAX_FORMAT
from ..memory.recall import HISTORY
from ..memory.retention import MAX_KEEP_MS
from .tenants import DEFAULT_TENANT, TENANT_HEADER, TENANT_PATTERN

Schema = dict[str, Any]
API = "/api/v1"
STATUSES = ("current", "superseded", "expired", "not-yet-valid", "expired-retention")


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def obj(properties: dict[str, Schema], required: Iterable[str] = (), **extra: Any) -> Schema:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False, **extra}


def strings(item: Schema | None = None) -> Schema:
    return {"type": "array", "items": item or {"type": "string"}}


def _class(chars: str) -> str:
    """The characters of a regex class, each as a backslash-u escape of four hex digits (JSON
    Schema, ECMA 262, Python and Rust regexes all read them the same)."""
    return "".join(f"\\u{ord(c):04x}" for c in chars)


# What str.isspace() holds (the server strips these to find an empty text), and the control
# characters an id may not hold (engine/values.py).
_SPACE = _class("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680" + "".join(
    chr(c) for c in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000")
_CONTROL = "\\u0000-\\u001f\\u007f-\\u009f"
# Text with at least one character that is not white space (a pattern matches anywhere).
NOT_BLANK = f"[^{_SPACE}]"
# The largest float32: an embedding's values must fit in one (a larger value is 422).
FLOAT32_MAX = 3.4028234663852886e38

TIME: Schema = {"type": "integer", "minimum": MIN_MS, "maximum": MAX_MS,
                "description": "milliseconds since the Unix epoch (UTC); a number without a "
                               "fraction (582 or 582.0)"}
ID: Schema = {"type": "string", "minLength": 1, "maxLength": 512, "pattern": f"^[^{_CONTROL}]+$",
              "description": "an id: 1 to 512 bytes of UTF-8, no control characters"}
# load's document name: an id holding a character other than white space, and no "/".
DOCUMENT: Schema = {"type": "string", "minLength": 1, "maxLength": 512,
                    "pattern": f"^[^{_CONTROL}/]*[^{_CONTROL}/{_SPACE}][^{_CONTROL}/]*$",
                    "description": "a document name: an id without '/', not only white space"}
NAME: Schema = {"type": "string", "minLength": 1, "maxLength": 512}
QUERY: Schema = {"type": "string", "maxLength": 65536, "description": "at most 64 KiB of UTF-8"}
# A name only looked up (forget scopes): any non-empty string.
LOOKUP: Schema = {"type": "string", "minLength": 1}
EMBEDDING: Schema = {"type": "array", "minItems": 1, "maxItems": 65536,
                     "items": {"type": "number", "minimum": -FLOAT32_MAX, "maximum": FLOAT32_MAX},
                     "description": "a vector of numbers in float32's range; every vector of a "
                                    "store has the dimension of its first (or the server's "
                                    "--input-dim)"}
METADATA: Schema = {"type": "object", "description": "a JSON object, at most 64 KiB as JSON"}
NUMBER_OR_NULL = nullable({"type": "number"})
INT_OR_NULL = nullable({"type": "integer"})
STRING_OR_NULL = nullable({"type": "string"})
KIND: Schema = {"type": "string", "enum": list(KINDS)}

_REMEMBER_PROPS: dict[str, Schema] = {
    "text": {"type": "string", "maxLength": 65536, "pattern": NOT_BLANK,
             "description": "the fact: not only white space, at most 64 KiB of UTF-8 and 4096 "
                            "words"},
    "id": nullable(ID), "subject": nullable(NAME), "entities": strings(NAME),
    "metadata": nullable(METADATA), "embedding": nullable(ref("Embedding")),
    "eventTime": nullable(TIME), "validFrom": nullable(TIME), "validTo": nullable(TIME),
    "supersedes": {**strings(ID), "description": "ids of stored facts (or of facts earlier in "
                                                 "the same rememberMany)"},
    "kind": KIND, "namespace": NAME, "sources": strings(NAME),
    "actor": nullable(NAME), "importance": NUMBER_OR_NULL,
    "retainUntil": nullable({**TIME, "description": "when the store stops keeping the fact "
                                                    "(ms since the Unix epoch)"}),
}
_WINDOW = "validTo, when given with validFrom, must be after it (422 otherwise)"
_RECALL_PROPS: dict[str, Schema] = {
    "query": QUERY,
    "k": {"type": "integer", "minimum": 1, "maximum": 1000},
    "asOf": nullable(TIME), "knownAt": nullable(TIME),
    "history": {"type": "string", "enum": list(HISTORY)},
    "subject": nullable(NAME), "entity": nullable(NAME), "namespace": nullable(NAME),
    "kinds": {"anyOf": [KIND, {"type": "array", "items": KIND, "minItems": 1}, {"type": "null"}]},
    "embedding": nullable(ref("Embedding")),
    "candidateLimit": {"type": "integer", "minimum": 1, "maximum": 1000},
    "explain": {"type": "boolean"},
}
_STATUS: Schema = {"type": "string", "enum": list(STATUSES)}
_ALL: Schema = {"type": "string", "const": "all"}
# Only the nextCursor of a page of the same listing (same filters) is a cursor: anything else is
# 422, which JSON Schema cannot say.
CURSOR: Schema = {"type": "string", "description": "the nextCursor of the previous page, as it came, "
                  "with the same filters; any other string is 422"}
_LIST_PROPS: dict[str, Schema] = {
    "namespace": nullable(NAME), "subject": nullable(NAME), "entity": nullable(NAME),
    "kind": {"anyOf": [KIND, {"type": "array", "items": KIND, "minItems": 1}, {"type": "null"}]},
    "status": {"anyOf": [_STATUS, _ALL, {"type": "array", "items": {"anyOf": [_STATUS, _ALL]},
                                         "minItems": 1}, {"type": "null"}],
               "description": "default 'current'; 'all' (alone or among others) for every status"},
    "metadata": nullable({"type": "object", "minProperties": 1}),
    "asOf": nullable(TIME), "knownAt": nullable(TIME),
}
_SCOPE: Schema = {
    "type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
    "description": "exactly one key",
    "properties": {
        "ids": {"type": "array", "items": {},
                "description": "ids to remove; what is not the id of a fact is ignored"},
        "subject": LOOKUP, "entity": LOOKUP, "namespace": LOOKUP,
        "source": {"type": "string", "minLength": 1, "pattern": "^[^\\u0000]*$"},
        "ingestedBefore": TIME, "eventBefore": TIME,
        "metadata": {"type": "object", "minProperties": 1},
    },
}

SCHEMAS: dict[str, Schema] = {
    "Embedding": EMBEDDING,
    "Error": obj({"error": obj({"code": {"type": "string"}, "message": {"type": "string"},
                                "hint": {"type": "string"}}, ["code", "message"])}, ["error"]),
    "RememberInput": obj(_REMEMBER_PROPS, ["text"], description=_WINDOW),
    "RememberResult": obj({"id": {"type": "string"}, "created": {"type": "boolean"},
                           "superseded": strings()}, ["id", "created", "superseded"]),
    "FileRef": obj({"uri": {"type": "string"}, "offset": {"type": "integer"},
                    "length": {"type": "integer"}, "format": STRING_OR_NULL,
                    "sha256": {"type": "string"}, "size": {"type": "integer"},
                    "mtime": {"type": "integer"}, "summary": STRING_OR_NULL},
                   ["uri", "offset", "length", "format", "sha256", "size", "mtime", "summary"]),
    "Fact": obj({
        "id": {"type": "string"}, "text": {"type": "string"}, "kind": KIND,
        "namespace": {"type": "string"}, "subject": STRING_OR_NULL, "entities": strings(),
        "metadata": nullable({"type": "object"}),
        "embedding": nullable({"type": "array", "items": {"type": "number"}}),
        "eventTime": INT_OR_NULL, "validFrom": INT_OR_NULL, "validTo": INT_OR_NULL,
        "ingestTime": {"type": "integer"}, "supersedes": strings(), "sources": strings(),
        "actor": STRING_OR_NULL, "importance": NUMBER_OR_NULL, "file": nullable(ref("FileRef")),
        "retainUntil": INT_OR_NULL,
    }, ["id", "text", "kind", "namespace", "subject", "entities", "metadata", "embedding",
        "eventTime", "validFrom", "validTo", "ingestTime", "supersedes", "sources", "actor",
        "importance", "file", "retainUntil"]),
    "Page": obj({"items": {"type": "array", "items": ref("Fact")},
                 "nextCursor": STRING_OR_NULL}, ["items", "nextCursor"]),
    "Explanation": obj({
        "id": {"type": "string"}, "lexical": NUMBER_OR_NULL, "semantic": NUMBER_OR_NULL,
        "fusion": {"type": "string"},
        "weights": {"type": "object", "additionalProperties": {"type": "number"}},
        "matchedTerms": strings(), "recencyMultiplier": {"type": "number"},
        "historicalMultiplier": {"type": "number"}, "importanceMultiplier": {"type": "number"},
        "status": {"type": "string", "enum": list(STATUSES)},
        "evaluatedAt": {"type": "integer"}, "validFrom": INT_OR_NULL, "validTo": INT_OR_NULL,
        "rank": nullable({"type": "integer", "minimum": 1}), "chain": strings(),
        "score": NUMBER_OR_NULL, "known": {"type": "boolean"}, "note": STRING_OR_NULL,
    }, ["id", "lexical", "semantic", "fusion", "weights", "matchedTerms", "recencyMultiplier",
        "historicalMultiplier", "status", "evaluatedAt", "validFrom", "validTo", "rank", "chain",
        "score", "known", "note", "importanceMultiplier"]),
    "RecallHit": obj({"fact": ref("Fact"), "score": {"type": "number"},
                      "status": {"type": "string", "enum": list(STATUSES)},
                      "explanation": nullable(ref("Explanation"))},
                     ["fact", "score", "status", "explanation"]),
    "ForgetReport": obj({"removed": strings(), "relinked": strings(), "dryRun": {"type": "boolean"}},
                        ["removed", "relinked", "dryRun"]),
    "ConsolidateReport": obj({"created": strings(), "superseded": strings(), "removed": strings(),
                              "dryRun": {"type": "boolean"}},
                             ["created", "superseded", "removed", "dryRun"]),
    "LoadResult": obj({"episodes": strings(), "facts": strings()}, ["episodes", "facts"]),
    "Profile": obj({"block": {"type": "string"},
                    "counts": {"type": "object", "additionalProperties": {"type": "integer"}}},
                   ["block", "counts"]),
    "Document": obj({"id": {"type": "string"}, "text": {"type": "string"},
                     "metadata": nullable({"type": "object"}),
                     "embedding": nullable({"type": "array", "items": {"type": "number"}})},
                    ["id", "text", "metadata", "embedding"]),
    "DocumentInput": obj({"text": {"type": "string", "description": "at most 1 MiB of UTF-8"},
                          "metadata": nullable(METADATA), "embedding": nullable(ref("Embedding"))},
                         ["text"]),
    "PutResult": obj({"id": {"type": "string"}, "created": {"type": "boolean"},
                      "revision": {"type": "integer"}}, ["id", "created", "revision"]),
    "DeleteResult": obj({"id": {"type": "string"}, "deleted": {"type": "boolean", "const": True}},
                        ["id", "deleted"]),
    "SearchRequest": obj({
        "query": QUERY, "k": {"type": "integer", "minimum": 1, "maximum": 1000},
        "embedding": nullable(ref("Embedding")), "ids": nullable(strings(ID)),
        "metadata": nullable(METADATA), "semantic": nullable({"type": "string", "enum": ["ngram"]}),
        "lexicalWeight": {"type": "number", "minimum": 0},
        "semanticWeight": {"type": "number", "minimum": 0},
    }, ["query"]),
    "Hit": obj({"id": {"type": "string"}, "score": {"type": "number"},
                "lexical": NUMBER_OR_NULL, "semantic": NUMBER_OR_NULL},
               ["id", "score", "lexical", "semantic"]),
    "Health": obj({"status": {"type": "string", "const": "ok"},
                   "replication": obj({
                       "target": {"type": "string"},
                       "maxLagMs": {"type": "integer"},
                       "tenants": {"type": "object", "additionalProperties": obj({
                           "state": {"type": ["string", "null"]}, "lagMs": {"type": "integer"},
                           "lagP99Ms": {"type": "integer"}, "pendingBytes": {"type": "integer"},
                           "errors": {"type": "integer"}})}},
                       ["target", "maxLagMs", "tenants"])}, ["status"]),
}


def items(schema: Schema) -> Schema:
    return obj({"items": {"type": "array", "items": schema}}, ["items"])


# op: (summary, request schema, response schema). The request schemas of the JSON contract.
MEMORY_OPERATIONS: dict[str, tuple[str, Schema, Schema]] = {
    "remember": ("Remember one fact (idempotent by id; a different payload is 409).",
                 ref("RememberInput"), ref("RememberResult")),
    "rememberMany": ("Remember facts in one transaction: all of them or none.",
                     obj({"inputs": {"type": "array", "items": ref("RememberInput"),
                                     "minItems": 1}}, ["inputs"]),
                     items(ref("RememberResult"))),
    "recall": ("Search the facts, with the temporal options.",
               obj(_RECALL_PROPS, ["query"]), items(ref("RecallHit"))),
    "explain": ("Why a fact came back for a query, or why not (404 for an unknown id).",
                obj({**{k: v for k, v in _RECALL_PROPS.items() if k != "explain"}, "id": ID},
                    ["query", "id"]), ref("Explanation")),
    "forget": ("Remove the facts of one scope (text zeroed before it returns).",
               obj({"scope": _SCOPE, "includeChain": {"type": "boolean"},
                    "dryRun": {"type": "boolean"}, "purge": {"type": "boolean"}}, ["scope"]),
               ref("ForgetReport")),
    "history": ("The supersession chain of a fact, oldest first (404 for an unknown id).",
                obj({"id": ID}, ["id"]), items(ref("Fact"))),
    "get": ("One fact (404 for an unknown or forgotten id).", obj({"id": ID}, ["id"]), ref("Fact")),
    "applyForgetting": ("Forget what the forgetting policy selects (dry run by default).",
                        obj({"dryRun": {"type": "boolean"}}), ref("ForgetReport")),
    "consolidate": ("Merge exact duplicates per the consolidation policy (dry run by default).",
                    obj({"dryRun": {"type": "boolean"}, "allowDestructive": {"type": "boolean"}}),
                    ref("ConsolidateReport")),
    "load": ("Load a Markdown document as episodes (idempotent by content).",
             obj({"document": DOCUMENT, "text": {"type": "string"}, "namespace": NAME,
                  "actor": nullable(NAME), "observedAt": nullable(TIME),
                  "chunkChars": {"type": "integer", "minimum": 64}}, ["document", "text"]),
             ref("LoadResult")),
    "rememberFile": ("Remember a reference to a file's bytes under the configured fileBase "
                     "(422 when the server has none).",
                     obj({"uri": {"type": "string", "minLength": 1, "maxLength": 4096,
                                  "pattern": "^[^\\u0000]*$",
                                  "description": "a path under the server's fileBase (relative "
                                                 "to it, or absolute inside it) or a file:// URI "
                                                 "of one; no other scheme"},
                          "byteRange": nullable({"type": "array", "items": {"type": "integer", "minimum": 0},
                                                 "minItems": 2, "maxItems": 2}),
                          "format": nullable({"type": "string", "minLength": 1,
                                              "maxLength": MAX_FORMAT}),
                          "summary": STRING_OR_NULL,
                          **{k: v for k, v in _REMEMBER_PROPS.items() if k != "text"}}, ["uri"]),
                     ref("RememberResult")),
    "hydrate": ("The bytes of a file-backed fact, sha256 checked (base64; 409 provenance_error).",
                obj({"id": ID}, ["id"]),
                obj({"id": {"type": "string"}, "length": {"type": "integer"},
                     "base64": {"type": "string"}}, ["id", "length", "base64"])),
    "list": ("One page of facts, newest first, with the cursor of the next page (null on the "
             "last); a listing never skips or repeats a fact, whatever is written meanwhile.",
             obj(_LIST_PROPS | {"limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                                "cursor": nullable(CURSOR)}), ref("Page")),
    "count": ("How many facts list returns over all its pages, with the same filters.",
              obj(_LIST_PROPS), obj({"count": {"type": "integer", "minimum": 0}}, ["count"])),
    "applyRetention": ("Forget the facts past their retention (dry run by default).",
                       obj({"dryRun": {"type": "boolean"}, "purge": {"type": "boolean"}}),
                       ref("ForgetReport")),
    "setRetention": ("Set (keepForMs) or remove (null) the default retention of a namespace; "
                     "the defaults after the change.",
                     obj({"namespace": NAME,
                          "keepForMs": nullable({"type": "integer", "minimum": 1,
                                                 "maximum": MAX_KEEP_MS})},
                         ["namespace", "keepForMs"]),
                     obj({"retention": {"type": "object",
                                        "additionalProperties": {"type": "integer"}}},
                         ["retention"])),
    "profile": ("A prompt-ready block of the current profile facts of a namespace.",
                obj({"namespace": NAME, "budgetChars": {"type": "integer", "minimum": 0}}),
                ref("Profile")),
}
# Operations no JSON body can carry out: the server answers them with 422 and a hint (capture
# needs an extractor, a callable), so the document leaves them out: it lists what a request
# can do.
NOT_OVER_JSON = frozenset({"capture"})
GENERIC_REQUEST: Schema = {"type": "object"}
GENERIC_RESPONSE: Schema = {"type": "object"}

_ERROR_STATUSES = {
    "400": "bad JSON, or an invalid X-HMS-Tenant header",
    "401": "missing, malformed or unknown API key (with --api-keys)",
    "403": "the API key belongs to another tenant, or the request came from a web origin the "
           "server does not allow (forbidden_origin)",
    "404": "unknown id, or unknown operation",
    "405": "method not allowed on this path",
    "408": "the request body did not arrive in time",
    "409": "conflict with what the store holds",
    "413": "the body is larger than --max-body",
    "415": "a POST or PUT body not sent as Content-Type: application/json",
    "421": "the Host header names a host this server does not answer to (invalid_host)",
    "422": "invalid request: a field is missing, unknown, or out of its limits",
    "500": "internal error (fixed message; details in the server log)",
    "503": "the tenant's store is unavailable, or the server is shutting down",
}


def _responses(ok: Schema, description: str = "the result") -> dict[str, Any]:
    out: dict[str, Any] = {"200": {"description": description,
                                   "content": {"application/json": {"schema": ok}}}}
    for status, text in _ERROR_STATUSES.items():
        out[status] = {"description": text,
                       "content": {"application/json": {"schema": ref("Error")}}}
    return out


def _body(schema: Schema) -> dict[str, Any]:
    # Every POST and PUT sends a JSON body as application/json (an operation without parameters
    # takes {}): the server refuses a body without that Content-Type (415, server/guard.py).
    return {"required": True, "content": {"application/json": {"schema": schema}}}


_TENANT_PARAM = {
    "name": "X-HMS-Tenant", "in": "header", "required": False,
    "description": f"the tenant (its own store); default {DEFAULT_TENANT!r}",
    "schema": {"type": "string", "pattern": f"^{TENANT_PATTERN}$"},
}
_ID_PARAM = {"name": "id", "in": "path", "required": True,
             "description": "the document id, percent-encoded", "schema": ID}


_LIST_QUERY = [
    {"name": "namespace", "in": "query", "required": False, "schema": NAME},
    {"name": "subject", "in": "query", "required": False, "schema": NAME},
    {"name": "entity", "in": "query", "required": False, "schema": NAME},
    {"name": "kind", "in": "query", "required": False, "explode": True,
     "schema": {"type": "array", "items": KIND}},
    {"name": "status", "in": "query", "required": False, "explode": True,
     "description": "default current; 'all' for every status",
     "schema": {"type": "array", "items": {"anyOf": [_STATUS, _ALL]}}},
    {"name": "asOf", "in": "query", "required": False, "schema": TIME},
    {"name": "knownAt", "in": "query", "required": False, "schema": TIME},
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
    {"name": "cursor", "in": "query", "required": False, "schema": CURSOR},
]


def build_openapi(operations: Iterable[str], *, embedding_dim: int | None = None) -> dict[str, Any]:
    """The OpenAPI document for a server whose JSON contract has ``operations``; with
    ``embedding_dim`` (``--input-dim``) every embedding it takes has exactly that many numbers."""
    schemas = copy.deepcopy(SCHEMAS)
    if embedding_dim is not None:
        schemas["Embedding"] = {**EMBEDDING, "minItems": embedding_dim, "maxItems": embedding_dim}
    paths: dict[str, Any] = {}
    for op in sorted(set(operations) - NOT_OVER_JSON):
        summary, request, response = MEMORY_OPERATIONS.get(
            op, (f"The {op} operation of the JSON contract.", GENERIC_REQUEST, GENERIC_RESPONSE))
        paths[f"{API}/memory/{op}"] = {"post": {
            "operationId": f"memory.{op}", "summary": summary, "tags": ["memory"],
            "parameters": [_TENANT_PARAM], "requestBody": _body(request),
            "responses": _responses(response),
        }}
    listing = {"get": {
        "operationId": "memories.list", "summary": MEMORY_OPERATIONS["list"][0], "tags": ["memory"],
        "parameters": [_TENANT_PARAM, *_LIST_QUERY], "responses": _responses(ref("Page")),
    }}
    paths[f"{API}/memories"] = listing
    paths["/v1/memories"] = {"get": {**listing["get"], "operationId": "memories.listV1"}}
    paths[f"{API}/documents/search"] = {"post": {
        "operationId": "documents.search", "summary": "Rank documents (BM25, cosine, fusion).",
        "tags": ["documents"], "parameters": [_TENANT_PARAM],
        "requestBody": _body(ref("SearchRequest")), "responses": _responses(items(ref("Hit"))),
    }}
    paths[f"{API}/documents/{{id}}"] = {
        "put": {"operationId": "documents.put", "summary": "Store a document (replaces the id).",
                "tags": ["documents"], "parameters": [_TENANT_PARAM, _ID_PARAM],
                "requestBody": _body(ref("DocumentInput")),
                "responses": _responses(ref("PutResult"))},
        "get": {"operationId": "documents.get", "summary": "One document (404 if none).",
                "tags": ["documents"], "parameters": [_TENANT_PARAM, _ID_PARAM],
                "responses": _responses(ref("Document"))},
        "delete": {"operationId": "documents.delete",
                   "summary": "Delete a document (404 if none); purge=true also compacts.",
                   "tags": ["documents"],
                   "parameters": [_TENANT_PARAM, _ID_PARAM,
                                  {"name": "purge", "in": "query", "required": False,
                                   "schema": {"type": "string", "enum": ["true", "false"]}}],
                   "responses": _responses(ref("DeleteResult"))},
    }
    paths["/healthz"] = {"get": {"operationId": "healthz", "summary": "Liveness.",
                                 "security": [], "responses": _responses(ref("Health"))}}
    paths["/openapi.json"] = {"get": {"operationId": "openapi", "summary": "This document.",
                                      "security": [],
                                      "responses": _responses({"type": "object"})}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "hmsengine", "version": "1",
                 "description": "The JSON contract of hmsengine's memory, over HTTP. Times are "
                                "integer ms since the Unix epoch (UTC); names are camelCase; "
                                "every error is {\"error\": {\"code\", \"message\"}}."},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "only when the server has --api-keys"}},
        },
        "security": [{"bearer": []}, {}],
    }


def resolve(schema: Any, document: dict[str, Any]) -> Any:
    """``schema`` with every local ``$ref`` replaced by its target (the schemas have no cycles)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            target: Any = document
            for part in schema["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return resolve(target, document)
        return {k: resolve(v, document) for k, v in schema.items()}
    if isinstance(schema, list):
        return [resolve(v, document) for v in schema]
    return schema


__all__ = ["API", "MEMORY_OPERATIONS", "SCHEMAS", "TENANT_HEADER", "build_openapi", "resolve"]
