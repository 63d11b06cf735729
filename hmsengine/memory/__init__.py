"""The memory API: facts over valid time and knowledge time, on the document engine."""

from .memory import Memory
from .values import (
    ConsolidateReport,
    Explanation,
    Fact,
    FileRef,
    ForgetReport,
    ForgetScope,
    RecallHit,
    RememberInput,
    RememberResult,
)

__all__ = [
    "ConsolidateReport", "Explanation", "Fact", "FileRef", "ForgetReport", "ForgetScope",
    "Memory", "RecallHit", "RememberInput", "RememberResult",
]
