"""The engine: ``Engine.open``, the writer actor, and the document methods."""

from .engine import Engine
from .values import Document, EngineStatistics, Hit, PutResult

__all__ = ["Document", "Engine", "EngineStatistics", "Hit", "PutResult"]
