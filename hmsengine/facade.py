"""``hmsengine.Engine``: the document engine with the methods API.md names on it from above.

The contract (API.md) puts ``engine.memory()``, ``export_jsonl``, ``import_jsonl``,
``snapshot`` and ``restore`` on the engine, but a memory and a portable file are higher layers
than documents: the engine layer (``engine/``) knows no facts. So the engine layer's class,
``DocumentEngine``, has the document methods only, and this module, above ``memory/`` and
``portability/``, adds the rest by subclassing it. ``Engine.open`` builds an ``Engine``
(``DocumentEngine.open`` builds the class it is called on), so ``async with Engine.open(path)``
gives the whole API, while ``Memory`` and the portability functions need only a
``DocumentEngine``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .engine import CompactReport, DocumentEngine
from .errors import InvalidRequest
from .memory import Memory, MemoryConfig
from .memory.core import Embedder
from .portability.exchange import DEFAULT_MAX_IMPORT_BYTES, ImportReport, export_jsonl, import_jsonl
from .portability.snapshot import DEFAULT_MAX_RESTORE_BYTES, restore, snapshot

Progress = Callable[[int, int], Any]  # (done, total)


class Engine(DocumentEngine):
    """An open store. Create it with ``async with Engine.open(path) as engine``."""

    def memory(self, config: MemoryConfig | dict[str, Any] | None = None, *,
               embedder: Embedder | None = None) -> Memory:
        """A ``Memory`` over this engine (``hmsengine.Memory(engine, config)``)."""
        return Memory(self, config, embedder=embedder)

    async def compact(self, *, purge: bool = False) -> CompactReport:
        """``DocumentEngine.compact``, after forgetting what is past its retention (memory
        retention: every compaction applies it, so the new generation leaves it out)."""
        if not isinstance(purge, bool):
            raise InvalidRequest(f"purge: expected a bool, got {type(purge).__name__}")
        self._check_open()
        await Memory(self, embedder=False).apply_retention(dry_run=False)
        return await super().compact(purge=purge)

    async def export_jsonl(self, path: str | os.PathLike[str], *,
                           progress: Progress | None = None) -> dict[str, int]:
        """Write every fact, document and tombstone to ``path`` (``.jsonl`` or ``.jsonl.gz``),
        sorted and canonical: equal stores give byte-identical files. Returns the counts.
        Written to a temporary file, fsynced and renamed. Plaintext, even from an encrypted store.
        """
        self._check_open()
        return await export_jsonl(self, path, progress=progress)

    async def import_jsonl(self, path: str | os.PathLike[str], *, progress: Progress | None = None,
                           max_bytes: int | None = None) -> ImportReport:
        """Validate every line of ``path``, then write it in one transaction; an ``ImportReport``.

        Equivalent records are skipped, a different one under a stored id is ``Conflict`` (nothing
        written), tombstoned ids are refused, tombstones in the file are applied (with purge).
        ``path`` must be a regular file of at most ``max_bytes`` (1 GiB by default, decompressed).
        """
        self._check_open()
        return await import_jsonl(self, path, progress=progress,
                                  max_bytes=DEFAULT_MAX_IMPORT_BYTES if max_bytes is None else max_bytes)

    async def snapshot(self, path: str | os.PathLike[str], *, format: str = "hmsengine-v2",
                       attachments: bool = False,
                       progress: Progress | None = None) -> dict[str, Any]:
        """Write a checksummed snapshot directory (``hmsengine-v2``, or ``hotmem-v2`` that HotMem
        hydrates); ``attachments`` adds the bytes of file-backed ranges under 8 KiB. The manifest."""
        self._check_open()
        return await snapshot(self, path, format=format, attachments=attachments, progress=progress)

    async def restore(self, path: str | os.PathLike[str], *, progress: Progress | None = None,
                      max_bytes: int | None = None) -> ImportReport:
        """Verify a snapshot (ours or HotMem's v2) completely, then restore it in one transaction
        with the import rules; a repeated restore adds nothing. An ``ImportReport``. Only
        regular files inside the snapshot directory are read, at most ``max_bytes`` together
        (1 GiB by default)."""
        self._check_open()
        return await restore(self, path, progress=progress,
                             max_bytes=DEFAULT_MAX_RESTORE_BYTES if max_bytes is None else max_bytes)


__all__ = ["Engine"]
