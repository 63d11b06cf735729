"""An OpenAI Agents SDK agent whose conversation lives in an hmsengine store. The model is a
local fake (no network, no key): it answers with what the session told it.

    pip install 'hmsengine[openai-agents]'
    python examples/openai_agents_session.py [STORE_DIR]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from typing import Any

from agents import Agent, ModelResponse, RunConfig, Runner, Usage
from agents.models.interface import Model
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from hmsengine.integrations.openai_agents import HMSSession


class RecallingModel(Model):
    """Answers with the number of earlier messages and the first thing the user said."""

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any,
                           tools: Any, output_schema: Any, handoffs: Any, tracing: Any,
                           **kwargs: Any) -> ModelResponse:
        said = [i["content"] for i in input if isinstance(i, dict) and i.get("role") == "user"]
        text = f"I have {len(input) - 1} earlier item(s); you first told me: {said[0]!r}"
        message = ResponseOutputMessage(
            id="msg", type="message", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def main(path: str) -> None:
    agent = Agent(name="assistant", instructions="Be brief.", model=RecallingModel())
    config = RunConfig(tracing_disabled=True)  # tracing would upload to OpenAI
    async with HMSSession("user-42", path, config={"embedder": "none"}) as session:
        for message in ("My name is Ana.", "What is my name?"):
            result = await Runner.run(agent, message, session=session, run_config=config)
            print(f"> {message}\n{result.final_output}")
        print(f"stored items: {len(await session.get_items())}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp() + "/store"))
