"""The memory API: facts over valid time and knowledge time, on the document engine."""

from .chunking import chunk_markdown
from .config import MemoryConfig
from .memory import Memory
from .values import (
    ConsolidateReport,
    Explanation,
    Fact,
    FileRef,
    ForgetReport,
    ForgetScope,
    LoadResult,
    Profile,
    RecallHit,
    RememberInput,
    RememberResult,
)

__all__ = [
    "ConsolidateReport", "Explanation", "Fact", "FileRef", "ForgetReport", "ForgetScope",
    "LoadResult", "Memory", "MemoryConfig", "Profile", "RecallHit", "RememberInput", "RememberResult",
    "chunk_markdown",
]
