"""Opening a store: the lock, ``format.json`` and the key, the live generation, recovery.

``open_store`` runs in a worker thread before any actor starts (``Engine.open``). In order:

1. refuse a non-empty directory that is not a store (``InvalidRequest``) before ``LOCK`` is made
   in it, so a refused open leaves nothing behind; then ``flock`` on ``LOCK`` (``StoreLocked``
   if another handle holds it; a path that is a file or cannot be created is ``InvalidRequest``)
   and the same check again, under the lock;
3. read ``format.json`` (``IncompatibleStore`` when ``min_reader_version`` is too new) and check
   the key against its key-check record before any other file is read (``WrongKey``); or, for a
   new store, write ``format.json`` and the first generation (``CorruptStore``, nothing
   written, when ``format.json`` is gone but the store's other files are there);
4. read ``CURRENT``, check that generation has both its files (``CorruptStore`` otherwise),
   open its journal and text segment (``StoreCore``); call ``before_recovery`` (the engine
   starts reading the generation's persisted index beside recovery);
5. ``recovery.recover``: replay, truncate a torn tail, repair the text segment (damage is found
   before anything is written); note whether a purge is pending;
6. erase stray generations an interrupted compaction left (zeroed first).

Any failure closes what was opened and releases the lock. Synchronous: no trio here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

from ..errors import WrongKey, map_errors
from ..storage import generations, manifest
from ..storage.codec import PLAIN, Codec
from ..storage.directory import Directory
from ..storage.keys import SealedCodec, new_encryption, open_encryption
from ..storage.manifest import StoreFormat
from .recovery import recover
from .store import StoreCore


def store_exists(path: str) -> bool:
    """Whether a store was created at ``path`` (its ``format.json`` is there): what the command
    line asks before a command that must not create one."""
    return os.path.isfile(os.path.join(path, manifest.FORMAT_FILE))


def open_store(directory: Directory, *, analyzer: str, dim: int, embedding_dim: int | None,
               now_ms: int, key: str | bytes | None = None,
               progress: Callable[[str], None] | None = None,
               before_recovery: Callable[[StoreCore], None] | None = None) -> StoreCore:
    """Lock, create if new, recover, and return the open core (the caller must ``close`` it).

    ``before_recovery(core)`` is called once the live generation is open and the key checked,
    before recovery: the engine starts reading the persisted index there, beside recovery
    (which never writes the live generation's index files). Not called if the open fails
    earlier."""
    if directory.isdir(""):
        # Refused before the lock file is made in it: a refused open leaves nothing behind.
        with map_errors("opening the store", file=directory.describe("")):
            generations.check_store_directory(directory)
    directory.lock()
    try:
        with map_errors("opening the store", file=directory.describe("")):
            generations.check_store_directory(directory)
            fmt, codec = _format_and_codec(directory, analyzer=analyzer, dim=dim,
                                           embedding_dim=embedding_dim, now_ms=now_ms, key=key)
            if not directory.exists(manifest.CURRENT_FILE):
                generations.create_first_generation(directory)
            live = generations.read_current(directory)
            generations.check_generation_files(directory, live)
            core = StoreCore.open_generation(directory, fmt, live, codec)
        try:
            if before_recovery is not None:
                before_recovery(core)
            recover(core, progress=progress)
            core.purge_pending = core.tombstones_since_base()
            # Left by an interrupted compaction: erase them (they may hold purged text).
            generations.remove_strays(directory, core.generation)
        except BaseException:
            core.close_files()
            raise
        return core
    except BaseException:
        directory.unlock()
        raise


def _format_and_codec(directory: Directory, *, analyzer: str, dim: int,
                      embedding_dim: int | None, now_ms: int,
                      key: str | bytes | None) -> tuple[StoreFormat, Codec]:
    """The store's recorded format and the codec its key opens (the key checked before any
    other file is read); for a new store, both created and ``format.json`` written."""
    if directory.exists(manifest.FORMAT_FILE):
        fmt = StoreFormat.from_json(directory.read_bytes(manifest.FORMAT_FILE),
                                    where=directory.describe(manifest.FORMAT_FILE))
        return fmt, store_codec(fmt, key)
    # Refused before anything is written: a new format.json would make an encrypted store's
    # files look plain (and its key check vanish).
    generations.check_not_headless(directory)
    store_id = uuid.uuid4().hex
    encryption, codec = None, PLAIN
    if key is not None:
        encryption, derived = new_encryption(key, store_id)
        codec = SealedCodec(derived)
    fmt = StoreFormat(analyzer=analyzer, dim=dim, embedding_dim=embedding_dim, created_ms=now_ms,
                      store_id=store_id, encryption=encryption)
    directory.atomic_write(manifest.FORMAT_FILE, fmt.to_json())
    return fmt, codec


def store_codec(fmt: StoreFormat, key: str | bytes | None, *, verb: str = "open") -> Codec:
    """The codec ``key`` opens a store of format ``fmt`` with, checked against its key-check
    record (``WrongKey`` for a missing or wrong key, or a key for a plain store)."""
    if fmt.encryption is not None:
        return SealedCodec(open_encryption(key, fmt.encryption, fmt.store_id))
    if key is not None:
        raise WrongKey(f"this store is not encrypted: {verb} it without a key")
    return PLAIN
