"""``HMSSession`` against the Agents SDK's own ``SQLiteSession`` (random operation sequences
give the same items), in an ``Agent``/``Runner`` run whose model is a local fake (no network),
durable across a reopen, with large items and retention."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import random
import time
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import SQLiteSession

from hmsengine import InvalidRequest
from hmsengine.integrations._bridge import Bridge
from hmsengine.integrations.openai_agents import HMSSession

SEQUENCES = int(os.environ.get("HMS_AGENTS_SEQUENCES", "500"))


def _item(rng: random.Random, n: int) -> dict[str, Any]:
    role = rng.choice(["user", "assistant", "system"])
    item: dict[str, Any] = {"role": role, "content": f"message {n} " + "word " * rng.randint(0, 5)}
    if rng.random() < 0.2:
        item = {"type": "function_call_output", "call_id": f"c{n}",
                "output": "é" * rng.randint(0, 40)}
    return item


async def _sequence(rng: random.Random, n: int, bridge: Bridge) -> int:
    ours = HMSSession(f"chat-{n}", bridge)
    theirs = SQLiteSession(f"chat-{n}")
    steps = rng.randint(3, 10)
    counter = 0
    for _ in range(steps):
        action = rng.random()
        if action < 0.4:
            items = [_item(rng, counter + k) for k in range(rng.randint(0, 3))]
            counter += len(items)
            await ours.add_items(items)
            await theirs.add_items(items)
        elif action < 0.75:
            limit = rng.choice([None, 0, -1, 1, 2, 5])
            assert await ours.get_items(limit) == await theirs.get_items(limit)
        elif action < 0.92:
            assert await ours.pop_item() == await theirs.pop_item()
        else:
            await ours.clear_session()
            await theirs.clear_session()
    assert await ours.get_items() == await theirs.get_items()
    theirs.close()
    return steps


def test_random_sequences_match_sqlite_session() -> None:
    """HMS_AGENTS_SEQUENCES (500) random sequences of add_items, get_items (None, 0, negative,
    positive limits), pop_item and clear_session give the same items as SQLiteSession, each
    sequence in its own session of one store."""
    rng = random.Random(7)

    async def run() -> None:
        bridge = await Bridge.open(None, {"embedder": "none"})
        try:
            started = time.monotonic()
            steps = 0
            for n in range(SEQUENCES):
                steps += await _sequence(rng, n, bridge)
            print(f"{SEQUENCES} sequences, {steps} operations in "
                  f"{time.monotonic() - started:.1f} s")
        finally:
            await bridge.aclose()

    asyncio.run(run())


def test_session_survives_reopen_with_large_items_and_retention(tmp_path) -> None:
    """Items written to a store on disk come back after the session is closed and the store
    reopened, an item over 48 KiB of JSON included; retain_for hides items past it; a
    non-JSON item is InvalidRequest and writes nothing."""
    path = tmp_path / "store"
    big = {"role": "tool", "content": "x" * 150_000}

    async def first() -> None:
        async with HMSSession("s1", path, config={"embedder": "none"}) as session:
            await session.add_items([{"role": "user", "content": "hi"}, big])
            with pytest.raises(InvalidRequest):
                await session.add_items([{"bad": {1, 2}}])
            assert len(await session.get_items()) == 2

    async def second() -> None:
        async with HMSSession("s1", path, config={"embedder": "none"}) as session:
            items = await session.get_items()
            assert items == [{"role": "user", "content": "hi"}, big]
            assert await session.pop_item() == big
            assert await session.get_items() == [{"role": "user", "content": "hi"}]

    asyncio.run(first())
    asyncio.run(second())

    now = [1_700_000_000_000]

    async def retained() -> None:
        bridge = await Bridge.open(None, {"embedder": "none"}, clock=lambda: now[0])
        try:
            session = HMSSession("brief", bridge, retain_for=dt.timedelta(minutes=1))
            await session.add_items([{"role": "user", "content": "soon gone"}])
            assert len(await session.get_items()) == 1
            now[0] += 61_000
            assert await session.get_items() == []
        finally:
            await bridge.aclose()

    asyncio.run(retained())


def test_an_agent_run_keeps_its_conversation(tmp_path) -> None:
    """Runner.run with a session: the second turn's model input holds the first turn (read
    back from the store), and the store holds both turns; the model is a local fake."""
    from agents import Agent, ModelResponse, RunConfig, Runner, Usage
    from agents.models.interface import Model
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    seen: list[Any] = []

    class EchoModel(Model):
        async def get_response(self, system_instructions, input, model_settings, tools,
                               output_schema, handoffs, tracing, **kwargs) -> ModelResponse:
            seen.append(input)
            said = input[-1]["content"] if isinstance(input, list) else input
            message = ResponseOutputMessage(
                id=f"msg-{len(seen)}", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", text=f"you said: {said}",
                                            annotations=[])])
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):  # pragma: no cover - not used
            raise NotImplementedError

    agent = Agent(name="echo", instructions="echo", model=EchoModel())
    config = RunConfig(tracing_disabled=True)

    async def run() -> list[Any]:
        async with HMSSession("conv", tmp_path / "store", config={"embedder": "none"}) as s:
            first = await Runner.run(agent, "my name is Ana", session=s, run_config=config)
            assert first.final_output == "you said: my name is Ana"
            await Runner.run(agent, "what is my name?", session=s, run_config=config)
            return await s.get_items()

    items = asyncio.run(run())
    texts = [str(i) for i in seen[1]]
    assert any("my name is Ana" in t for t in texts) and any("you said" in t for t in texts)
    assert len(items) == 4 and items[0]["content"] == "my name is Ana"
