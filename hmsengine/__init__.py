"""hmsengine: an embedded, async memory engine for AI agents.

The public face: the names of the API contract (docs/API.md) that this build
implements, re-exported from the private modules. Nothing else lives here.
"""

from .engine import CheckFinding, CheckReport, Document, Hit
from .errors import (
    Conflict,
    CorruptStore,
    DurabilityError,
    HmsError,
    IncompatibleStore,
    InvalidRequest,
    NotFound,
    PolicyError,
    ProvenanceError,
    StoreLocked,
    WrongKey,
)
from .facade import Engine
from .memory import (
    Explanation,
    Fact,
    FileRef,
    ForgetReport,
    ForgetScope,
    LoadResult,
    Memory,
    MemoryConfig,
    Profile,
    RecallHit,
    RememberInput,
    RememberResult,
    chunk_markdown,
)
from .portability.exchange import ImportReport
from .portability.inspect import inspect_file

__all__ = [
    "CheckFinding",
    "CheckReport",
    "Conflict",
    "CorruptStore",
    "Document",
    "DurabilityError",
    "Engine",
    "Explanation",
    "Fact",
    "FileRef",
    "ForgetReport",
    "ForgetScope",
    "Hit",
    "HmsError",
    "ImportReport",
    "IncompatibleStore",
    "InvalidRequest",
    "LoadResult",
    "Memory",
    "MemoryConfig",
    "NotFound",
    "PolicyError",
    "Profile",
    "ProvenanceError",
    "RecallHit",
    "RememberInput",
    "RememberResult",
    "StoreLocked",
    "WrongKey",
    "chunk_markdown",
    "inspect_file",
]
