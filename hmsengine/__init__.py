"""hmsengine: an embedded, async memory engine for AI agents.

The public face: the names of the API contract (docs and ../shared/design/API.md) that this build
implements, re-exported from the private modules. Nothing else lives here.
"""

from .config import MemoryConfig
from .engine import Document, Engine, Hit
from .errors import (
    Conflict,
    CorruptStore,
    DurabilityError,
    HmsError,
    IncompatibleStore,
    InvalidRequest,
    NotFound,
    ProvenanceError,
    StoreLocked,
    WrongKey,
)
from .memory import (
    Explanation,
    Fact,
    FileRef,
    ForgetReport,
    ForgetScope,
    Memory,
    RecallHit,
    RememberInput,
    RememberResult,
)

__all__ = [
    "Conflict",
    "Explanation",
    "Fact",
    "FileRef",
    "ForgetReport",
    "ForgetScope",
    "Memory",
    "MemoryConfig",
    "RecallHit",
    "RememberInput",
    "RememberResult",
    "CorruptStore",
    "Document",
    "DurabilityError",
    "Engine",
    "Hit",
    "HmsError",
    "IncompatibleStore",
    "InvalidRequest",
    "NotFound",
    "ProvenanceError",
    "StoreLocked",
    "WrongKey",
]
