"""``hms mcp --store PATH``: the memory as MCP tools over stdio, for a model to call.

Tools: ``remember``, ``recall``, ``explain``, ``forget``, ``list``, ``history``, and ``load`` and
``profile`` when the JSON contract has them (``memory.jsonapi.OPERATIONS`` is checked when the
server starts). Each tool turns its arguments into a body of the JSON contract and calls
``memory.call``: there is one implementation of every operation, and the tools only adapt names
for a model (a forget scope is flat arguments; times are integer ms or ISO 8601 strings with a
timezone). A tool's answer is its JSON result without the facts' embeddings (vectors a model
cannot read; nulls and empty lists are also left out of the text, the structured content keeps
them); an error is a tool result with ``isError`` and the
error's code, message and hint, so the model can correct its call.

The store is opened once at start and closed when the client closes stdin; a returned write is
durable (the engine's guarantee). Logs go to stderr: stdout is the protocol.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from .clock import to_ms
from .errors import HmsError, InvalidRequest
from .facade import Engine
from .memory import Memory
from .memory.config import KINDS, MemoryConfig
from .memory.jsonapi import OPERATIONS
from .memory.stored_policies import for_store

logger = logging.getLogger("hmsengine.mcp")
SERVER_NAME = "hmsengine"
INSTRUCTIONS = (
    "A durable long-term memory. Use `recall` before answering questions that may depend on "
    "what the user told you earlier; use `remember` for each new durable fact (one fact per "
    "call, short and self-contained, with a `subject` like 'alice/city' when the fact is a "
    "value that can change later); use `forget` when the user asks you to forget something. "
    "Times are integer milliseconds since 1970-01-01 UTC or ISO 8601 strings with a timezone."
)

_TIME = {"anyOf": [{"type": "integer"}, {"type": "string", "format": "date-time"}],
         "description": "integer ms since the Unix epoch, or ISO 8601 with a timezone "
                        "(e.g. 2024-05-01T12:00:00Z)"}


def _time(description: str) -> dict[str, Any]:
    return {**_TIME, "description": f"{description}; {_TIME['description']}"}


_NAMESPACE = {"type": "string", "minLength": 1,
              "description": "a separate memory space (default 'default'), e.g. one per user"}
_FILTERS: dict[str, Any] = {
    "asOf": _time("evaluate validity at this time instead of now"),
    "knownAt": _time("ignore what was learned after this time"),
    "history": {"type": "string", "enum": ["current", "all", "historical"],
                "description": "'current' (default): only facts true now; 'all': also superseded "
                               "and expired ones; 'historical': only those"},
    "subject": {"type": "string", "description": "only facts about this subject"},
    "entity": {"type": "string", "description": "only facts mentioning this entity"},
    "namespace": {"type": "string", "description": "only this namespace"},
    "kinds": {"type": "array", "items": {"type": "string", "enum": list(KINDS)}, "minItems": 1,
              "description": "kinds to search (default fact, profile, procedure; episodes "
                             "only when named)"},
}


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


@attrs.frozen
class Tool:
    """One MCP tool: its schema for the model and how its arguments become a JSON-contract call."""

    name: str
    description: str
    input_schema: dict[str, Any]
    op: str
    body: Callable[[dict[str, Any]], dict[str, Any]]


def _times(args: dict[str, Any], *names: str) -> dict[str, Any]:
    """``args`` with ISO 8601 strings of the time fields ``names`` turned into ms."""
    out = dict(args)
    for name in names:
        value = out.get(name)
        if isinstance(value, str):
            try:
                parsed = _dt.datetime.fromisoformat(value)
            except ValueError:
                raise InvalidRequest(f"{name}: {value!r} is not ISO 8601",
                                     hint="e.g. 2024-05-01T12:00:00Z, or integer ms") from None
            out[name] = to_ms(parsed, field=name)
    return out


_SCOPES = ("ids", "subject", "entity", "namespace", "ingestedBefore", "eventBefore", "metadata",
           "source")


def _forget_body(args: dict[str, Any]) -> dict[str, Any]:
    args = _times(args, "ingestedBefore", "eventBefore")
    chosen = [k for k in _SCOPES if k in args]
    if len(chosen) != 1:
        raise InvalidRequest("forget: give exactly one of " + ", ".join(_SCOPES),
                             hint="e.g. {\"ids\": [\"m-...\"]} or {\"subject\": \"alice/city\"}")
    body = {k: v for k, v in args.items() if k not in _SCOPES}
    body["scope"] = {chosen[0]: args[chosen[0]]}
    return body


TOOLS: tuple[Tool, ...] = (
    Tool("remember",
         "Store one fact in long-term memory so that it can be recalled later, also in other "
         "conversations. Write it as a short self-contained sentence ('Alice moved to Lisbon "
         "in May 2024'). Give `subject` (e.g. 'alice/city') when the fact is the current value "
         "of something that can change; give `supersedes` with the ids of facts it replaces. "
         "Remembering the same fact twice stores it once. Returns the fact's id.",
         _schema({
             "text": {"type": "string", "minLength": 1, "description": "the fact itself"},
             "subject": {"type": "string", "description": "what the fact is about, as a slot "
                                                          "name, e.g. 'alice/city'"},
             "entities": {"type": "array", "items": {"type": "string"},
                          "description": "names of people, places or things it mentions"},
             "kind": {"type": "string", "enum": list(KINDS),
                      "description": "'fact' (default), 'profile' (a stable trait of the user),"
                                     " 'procedure' (how to do something), 'episode' (a record "
                                     "of what happened)"},
             "namespace": _NAMESPACE,
             "eventTime": _time("when it happened"),
             "validFrom": _time("from when it is true"),
             "validTo": _time("until when it is true (exclusive)"),
             "supersedes": {"type": "array", "items": {"type": "string"},
                            "description": "ids of facts this one replaces"},
             "metadata": {"type": "object", "description": "any JSON object to keep with it"},
             "id": {"type": "string", "description": "an id of your choice (default: derived "
                                                     "from the content)"},
             "sources": {"type": "array", "items": {"type": "string"},
                         "description": "where it comes from (ids, URLs)"},
             "actor": {"type": "string", "description": "who stated it"},
             "importance": {"type": "number", "description": "how much it matters"},
             "retainUntil": _time("when the memory must be deleted (e.g. chat memories kept "
                                  "30 days); after it, it is no longer recalled"),
         }, ("text",)),
         "remember", lambda a: _times(a, "eventTime", "validFrom", "validTo", "retainUntil")),
    Tool("recall",
         "Search long-term memory for facts relevant to a question or topic. Returns the best "
         "matches, each with its id, text, status ('current', 'superseded', 'expired', "
         "'not-yet-valid') and score. Use it before answering anything that may depend on "
         "earlier conversations.",
         _schema({"query": {"type": "string", "description": "what to look for, in words"},
                  "k": {"type": "integer", "minimum": 1, "maximum": 100,
                        "description": "how many results (default 10)"},
                  **_FILTERS,
                  "explain": {"type": "boolean",
                              "description": "also say why each fact matched"}}, ("query",)),
         "recall", lambda a: _times(a, "asOf", "knownAt")),
    Tool("explain",
         "Explain why a remembered fact does or does not come back for a query: its lexical "
         "score, matched terms, status and validity, rank, and its chain of versions.",
         _schema({"query": {"type": "string", "description": "the query"},
                  "id": {"type": "string", "description": "the fact's id"},
                  **_FILTERS}, ("query", "id")),
         "explain", lambda a: _times(a, "asOf", "knownAt")),
    Tool("forget",
         "Permanently remove facts from memory: give exactly one of `ids`, `subject`, `entity`, "
         "`namespace`, `ingestedBefore`, `eventBefore`, `metadata` or `source`. Set `dryRun` "
         "to see what would be removed first. Returns the ids removed.",
         _schema({"ids": {"type": "array", "items": {"type": "string"},
                          "description": "these facts"},
                  "subject": {"type": "string", "description": "every fact about this subject"},
                  "entity": {"type": "string", "description": "every fact mentioning it"},
                  "namespace": {"type": "string", "description": "a whole namespace"},
                  "ingestedBefore": _time("facts stored before this time"),
                  "eventBefore": _time("facts that happened before this time"),
                  "metadata": {"type": "object", "minProperties": 1,
                               "description": "facts whose metadata has all these key: values"},
                  "source": {"type": "string", "minLength": 1,
                             "description": "everything that came from one document or file: "
                                            "its path, file:// URI or loaded document name"},
                  "includeChain": {"type": "boolean",
                                   "description": "also remove older and newer versions"},
                  "dryRun": {"type": "boolean", "description": "only report, remove nothing"},
                  "purge": {"type": "boolean",
                            "description": "also rewrite the store so no byte of it remains"}}),
         "forget", _forget_body),
    Tool("list",
         "Browse what is stored, newest first, without a query: one page of facts (with ids, "
         "texts, subjects, times) and `nextCursor` for the next page (null on the last one). "
         "Pass the cursor back with the same filters to continue.",
         _schema({"namespace": {"type": "string", "description": "only this namespace"},
                  "subject": {"type": "string", "description": "only facts about this subject"},
                  "entity": {"type": "string", "description": "only facts mentioning it"},
                  "kind": {"type": "string", "enum": list(KINDS), "description": "only this kind"},
                  "status": {"type": "string",
                             "enum": ["current", "superseded", "expired", "not-yet-valid",
                                      "expired-retention", "all"],
                             "description": "'current' (default), another status, or 'all'"},
                  "asOf": _time("evaluate statuses at this time instead of now"),
                  "knownAt": _time("ignore what was learned after this time"),
                  "limit": {"type": "integer", "minimum": 1, "maximum": 1000,
                            "description": "facts per page (default 100)"},
                  "cursor": {"type": "string",
                             "description": "the nextCursor of the previous page"}}),
         "list", lambda a: _times(a, "asOf", "knownAt")),
    Tool("history",
         "Show every version of a fact (what it superseded and what superseded it), oldest "
         "first.",
         _schema({"id": {"type": "string", "description": "the fact's id"}}, ("id",)),
         "history", dict),
    Tool("load",
         "Store a Markdown document in memory as episodes, one per section-sized chunk "
         "(ids '<document>-0001', ...). Loading the same text again changes nothing.",
         _schema({"document": {"type": "string", "description": "a short name for the document "
                                                                "(no '/')"},
                  "text": {"type": "string", "description": "the Markdown text"},
                  "namespace": _NAMESPACE,
                  "observedAt": _time("when the document was observed"),
                  "chunkChars": {"type": "integer", "minimum": 64,
                                 "description": "largest chunk in characters (default 2000)"}},
                 ("document", "text")),
         "load", lambda a: _times(a, "observedAt")),
    Tool("profile",
         "Get a compact, prompt-ready summary of what is currently known in a namespace: its "
         "current facts, profile traits and procedures, newest first, within a size budget.",
         _schema({"namespace": _NAMESPACE,
                  "budgetChars": {"type": "integer", "minimum": 1,
                                  "description": "largest summary in characters "
                                                 "(default 4000)"}}),
         "profile", dict),
)


def available_tools() -> tuple[Tool, ...]:
    """The tools whose operation the JSON contract has (``load`` and ``profile`` came later)."""
    return tuple(t for t in TOOLS if t.op in OPERATIONS)


def _prune(value: Any, *, top: bool = True) -> Any:
    """The value without nested nulls and empty lists (shorter to read for a model); the keys of
    the result itself stay, so ``{"items": []}`` still says "nothing"."""
    if isinstance(value, dict):
        return {k: _prune(v, top=False) for k, v in value.items()
                if top or (v is not None and v != [])}
    if isinstance(value, list):
        return [_prune(v, top=False) for v in value]
    return value


async def call_tool(memory: Memory, name: str, arguments: dict[str, Any] | None
                    ) -> tuple[bool, str, dict[str, Any] | None]:
    """Run tool ``name``: (is_error, text for the model, structured result)."""
    tools = {t.name: t for t in available_tools()}
    tool = tools.get(name)
    if tool is None:
        return True, f"unknown tool {name!r}; the tools are {', '.join(tools)}", None
    try:
        args = dict(arguments or {})
        result = await memory.call(tool.op, tool.body(args))
    except HmsError as exc:
        text = f"{exc.code}: {exc.message}" + (f" (hint: {exc.hint})" if exc.hint else "")
        return True, text, None
    except Exception:
        logger.exception("tool %s failed", name)
        return True, "internal error; the details are in the server's log", None
    result = _without_vectors(result)
    return False, json.dumps(_prune(result), ensure_ascii=False), result


def _without_vectors(value: Any) -> Any:
    """The value with each fact's ``embedding`` left out: a model cannot read a vector, and 384
    floats per fact cost more of its context than the rest of a recall (the JSON API, HTTP and
    the clients still return them)."""
    if isinstance(value, dict):
        fact = "embedding" in value and "id" in value and "text" in value
        return {k: _without_vectors(v) for k, v in value.items()
                if not (fact and k == "embedding")}
    if isinstance(value, list):
        return [_without_vectors(v) for v in value]
    return value


def build_server(memory: Memory | Callable[[Any], Memory]) -> Any:
    """The MCP server (the ``mcp`` package's low-level ``Server``) over ``memory``, or over
    the memory ``memory(ctx)`` picks for each request (``hms serve``'s /mcp: the tenant's)."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    memory_of: Callable[[Any], Memory] = (
        (lambda ctx: memory) if isinstance(memory, Memory) else memory)

    listed = [types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
              for t in available_tools()]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        is_error, text, structured = await call_tool(memory_of(ctx), params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    structured_content=structured, is_error=is_error)

    return Server(SERVER_NAME, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=on_call_tool)


async def serve_stdio(store: str | Path, *, config: MemoryConfig | None = None) -> None:
    """Open the store, serve MCP over stdin/stdout until the client closes stdin."""
    from mcp.server.stdio import stdio_server

    async with Engine.open(store) as engine:
        # --memory-config's policies are those of a new store: the store's record wins.
        memory = Memory(engine, for_store(engine, config or MemoryConfig()))
        server = build_server(memory)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def run(store: str, memory_config: str | None = None) -> int:
    """``hms mcp``: serve until stdin closes; the exit code."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = None
        if memory_config:
            try:
                body = json.loads(Path(memory_config).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InvalidRequest(f"--memory-config {memory_config}: {exc}") from None
            config = MemoryConfig.from_json(body)
        trio.run(lambda: serve_stdio(store, config=config))
    except HmsError as exc:
        print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
        return 2 if isinstance(exc, InvalidRequest) else 4
    except KeyboardInterrupt:
        return 130
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m hmsengine.mcp --store PATH``: the same as ``hms mcp``."""
    parser = argparse.ArgumentParser(prog="hms mcp", description="MCP server over stdio")
    parser.add_argument("--store", required=True, help="the store directory")
    parser.add_argument("--memory-config", metavar="FILE", help="a MemoryConfig as JSON")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and 2
    return run(args.store, args.memory_config)


if __name__ == "__main__":
    sys.exit(main())
