"""The memory policies: the protocols a ``MemoryConfig`` accepts, and the built-in policies.

::

    from hmsengine import Memory, MemoryConfig
    from hmsengine.policies import FactInfo, LatestBySubject

    class SameKindLatest:                        # a SupersessionPolicy
        def supersedes(self, newer: FactInfo, older: FactInfo) -> bool:
            return newer.kind == older.kind

    memory = Memory(engine, MemoryConfig(supersession=SameKindLatest()))

What each protocol is given, what it returns and when it is called: memory/policies.py and
docs/guide.md ("Policies"). Names select the built-ins in JSON (``{"supersession":
"latest-by-subject"}``); an object policy works in-process only (``MemoryConfig.to_json``
refuses it).
"""

from .memory.policies import (
    Consolidation,
    ConsolidationPolicy,
    FactInfo,
    Forgetting,
    ForgettingPolicy,
    Importance,
    ImportancePolicy,
    LatestBySubject,
    NoSupersession,
    Recency,
    RecencyPolicy,
    SupersessionPolicy,
)

__all__ = [
    "Consolidation", "ConsolidationPolicy", "FactInfo", "Forgetting", "ForgettingPolicy",
    "Importance", "ImportancePolicy", "LatestBySubject", "NoSupersession", "Recency",
    "RecencyPolicy", "SupersessionPolicy",
]
