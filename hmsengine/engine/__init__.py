"""The engine: ``Engine.open``, the writer actor, and the document methods."""

from .engine import Engine
from .scrub import CheckFinding, CheckReport
from .values import Document, EngineStatistics, Hit, PutResult

__all__ = ["CheckFinding", "CheckReport", "Document", "Engine", "EngineStatistics", "Hit",
           "PutResult"]
