"""A LangGraph graph whose long-term memory is an hmsengine store (no network, no model).

    pip install 'hmsengine[langgraph]'
    python examples/langgraph_store.py [STORE_DIR]

The node reads the user's memories through get_store(), adds what the user said, and answers
from what it recalls; run it twice on the same directory: the second run remembers the first.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from typing import TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph

from hmsengine.integrations.langgraph import HMSStore


class State(TypedDict):
    user: str
    message: str
    answer: str


def respond(state: State) -> dict[str, str]:
    store = get_store()
    space = ("memories", state["user"])
    recalled = store.search(space, query=state["message"], limit=3)
    count = len(store.search(space, limit=1000))
    store.put(space, f"m{count}", {"text": state["message"]})
    if not recalled:
        return {"answer": "Noted. I did not know anything related yet."}
    return {"answer": "Noted. Related: " + "; ".join(i.value["text"] for i in recalled)}


async def main(path: str) -> None:
    builder = StateGraph(State)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    async with HMSStore.open(path, config={"embedder": "none"}) as store:
        graph = builder.compile(store=store)
        for message in ("I live in Porto", "I like figs from Porto", "where do I live?"):
            out = await graph.ainvoke({"user": "ana", "message": message, "answer": ""})
            print(f"> {message}\n{out['answer']}")
        print("namespaces:", await store.alist_namespaces())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp() + "/store"))
