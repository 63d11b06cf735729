"""Adapters that put hmsengine behind agent frameworks' own interfaces (the top layer: they use
the public API only). Each needs its framework, installed as an extra:

* ``hmsengine.integrations.langgraph.HMSStore``: a LangGraph ``BaseStore`` (``hmsengine[langgraph]``).
* ``hmsengine.integrations.openai_agents.HMSSession``: an OpenAI Agents SDK ``Session``
  (``hmsengine[openai-agents]``).
"""
