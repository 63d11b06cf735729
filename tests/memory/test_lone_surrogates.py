"""A lone surrogate (a str that is not text: UTF-8 cannot encode it) anywhere a caller passes a
string is InvalidRequest naming the field, never a UnicodeEncodeError (issue 29)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from hmsengine import Engine, ForgetScope, InvalidRequest, Memory

S = "a\ud800b"
Call = Callable[[Engine, Memory], Awaitable[Any]]

CALLS: dict[str, Call] = {
    "put id": lambda e, m: e.put_document(S, "x"),
    "put text": lambda e, m: e.put_document("i", S),
    "put metadata key": lambda e, m: e.put_document("i", "x", metadata={S: 1}),
    "put nested metadata key": lambda e, m: e.put_document("i", "x", metadata={"k": [{S: 1}]}),
    "put metadata value": lambda e, m: e.put_document("i", "x", metadata={"k": S}),
    "search query": lambda e, m: e.search_documents(S),
    "search metadata key": lambda e, m: e.search_documents("x", metadata={S: 1}),
    "search ids": lambda e, m: e.search_documents("x", ids=[S]),
    "get": lambda e, m: e.get_document(S),
    "delete": lambda e, m: e.delete_document(S),
    "remember text": lambda e, m: m.remember(S),
    "remember metadata key": lambda e, m: m.remember("t", metadata={S: 1}),
    "remember subject": lambda e, m: m.remember("t", subject=S),
    "remember entity": lambda e, m: m.remember("t", entities=(S,)),
    "remember namespace": lambda e, m: m.remember("t", namespace=S),
    "recall query": lambda e, m: m.recall(S),
    "recall subject": lambda e, m: m.recall("x", subject=S),
    "recall entity": lambda e, m: m.recall("x", entity=S),
    "explain id": lambda e, m: m.explain("x", S),
    "history id": lambda e, m: m.history(S),
    "forget subject": lambda e, m: m.forget(ForgetScope.subject(S)),
    "forget ids": lambda e, m: m.forget(ForgetScope.ids(["ok", S])),
    "forget metadata key": lambda e, m: m.forget(ForgetScope.metadata({S: 1})),
    "profile namespace": lambda e, m: m.profile(S),
    "remember_file uri": lambda e, m: m.remember_file("/tmp/" + S),
    "call metadata key": lambda e, m: m.call("remember", {"text": "x", "metadata": {S: 1}}),
    "call unknown key": lambda e, m: m.call("recall", {"query": "x", S: 1}),
}


@pytest.mark.parametrize("name", sorted(CALLS))
async def test_a_lone_surrogate_is_invalid_request(name: str) -> None:
    """Each entry point refuses a lone surrogate with InvalidRequest; nothing is written."""
    async with Engine.open(None) as engine:
        memory = engine.memory()
        with pytest.raises(InvalidRequest, match="surrogate") as refused:
            await CALLS[name](engine, memory)
        refused.value.message.encode("utf-8")  # the message itself can be printed and sent
        assert engine.statistics().documents == 0
