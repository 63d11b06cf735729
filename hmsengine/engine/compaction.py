"""Compaction and purge: write a new generation, switch ``CURRENT``, erase the old one.

The writer actor runs a compaction (so no commit interleaves with it); the heavy parts run in a
worker thread while readers keep reading the old generation:

1. :func:`write_generation` writes ``gen-N+1/``: a text segment holding only live documents,
   a journal of *base* frames (every live document with its version key, at the current
   revision) and a checkpoint, then fsyncs both files and the directory. The index-builder
   persists the current index segments into it (document keys are unchanged).
2. ``CURRENT`` is replaced atomically: before that instant a crash leaves the old generation
   live, after it the new one; never neither.
3. :meth:`StoreCore.switch_generation` (event loop, synchronous) points the table at the new
   records with fresh entries, so a reader that raced the switch retries its read.
4. ``storage.generations.remove_generation`` removes every other generation; with ``purge`` (and always for
   generations an interrupted compaction left behind) each file is first overwritten with zeros
   and fsynced, so no byte of a deleted or replaced document survives in any file.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import NamedTuple

import attrs
import numpy as np
import trio

from ..errors import HmsError, map_errors
from ..storage import manifest
from ..storage.codec import Codec
from ..storage.directory import Directory
from ..storage.generations import (
    generation_bytes,
    next_generation,
    open_generation_files,
    remove_generation,
    stray_generations,
    write_current,
)
from ..storage.journal import KIND_BASE, KIND_CHECKPOINT, encode_frame
from ..storage.manifest import FORMAT_VERSION
from ..storage.segments import record_crc
from .indexer import Indexer
from .state import EMBEDDING, KEY, METADATA
from .store import StoreCore
from .txn import Checkpoint, StoredPut, encode_checkpoint, encode_transaction, stored_put

BASE_FRAME_DOCUMENTS = 2000
TEXT_BUFFER_BYTES = 4 * 1024 * 1024


@attrs.frozen(kw_only=True)
class CompactReport:
    """What a compaction did."""

    generation: str
    documents: int
    bytes_before: int
    bytes_after: int
    purged: bool
    generations_removed: tuple[str, ...]


@attrs.frozen(kw_only=True)
class NewGeneration:
    name: str
    locations: dict[str, tuple[int, int, int]]  # id -> (offset, length, crc) in the new text
    bytes_written: int


class BaseDocument(NamedTuple):
    """One live document as a new generation's base carries it."""

    id: str
    text: bytes  # UTF-8
    metadata_json: str | None
    embedding: np.ndarray | None
    key: int  # its version key, kept across generations (the index's document number)


def write_generation(core: StoreCore, name: str) -> NewGeneration:
    """Write and fsync a complete new generation holding the table's live documents."""
    entries = sorted(core.table.entries.items(), key=lambda item: item[1][KEY])
    documents = (BaseDocument(doc_id, core.text.read(*e[:3]), e[METADATA], e[EMBEDDING], e[KEY])
                 for doc_id, e in entries)
    commit_ms = core.clock() if core.clock is not None else None
    return write_base_generation(core.directory, name, core.codec, documents,
                                 revision=core.table.revision, embedding_dim=core.table.embedding_dim,
                                 commit_ms=commit_ms)


def write_base_generation(directory: Directory, name: str, codec: Codec,
                          documents: Iterable[BaseDocument], *, revision: int,
                          embedding_dim: int | None, commit_ms: int | None,
                          origin: str | None = None, compress_small: bool = True) -> NewGeneration:
    """Write and fsync generation ``name``: ``documents`` (in version-key order) as text records
    and base frames at ``revision``, then a checkpoint. Compaction writes its new generation
    with it; a restore from a bucket (engine/replica_restore.py) its rebuilt one, with
    ``origin``, and texts under 1 KiB in raw blocks as the write path stores them
    (``compress_small=False``: a million zstd calls were a fifth of a restore's CPU)."""
    with map_errors("compacting", file=directory.describe(name)):
        directory.makedirs(name)
        journal, text = open_generation_files(directory, name, codec)
        try:
            journal.truncate(0)
            text.handle.truncate(0)
            label = f"{name}/{manifest.JOURNAL_FILE}".encode()
            locations: dict[str, tuple[int, int, int]] = {}
            buffer: list[bytes] = []
            buffered = 0
            offset = 0
            puts: list[StoredPut] = []
            written = 0

            def flush_text() -> None:
                nonlocal buffer, buffered
                if buffer:
                    text.handle.append(b"".join(buffer))
                    buffer, buffered = [], 0

            def flush_frame(last: bool) -> None:
                nonlocal puts, written
                if not puts and not (last and not written):
                    return
                payload = encode_transaction(list(puts), embedding_dim=embedding_dim,
                                             commit_ms=commit_ms, origin=origin)
                journal.append(encode_frame(codec, kind=KIND_BASE, sequence=revision,
                                            payload=payload, version=FORMAT_VERSION,
                                            file_label=label, offset=journal.size(),
                                            compress_small=True))
                written += 1
                puts = []

            for doc in documents:
                # Compressed whatever its size: the new generation is written for the long
                # term, and compaction is not on any caller's write path (codec.py).
                record = text.encode_at(doc.text, offset, compress_small=compress_small)
                buffer.append(record)
                buffered += len(record)
                locations[doc.id] = (offset, len(record), record_crc(record))
                puts.append(stored_put(doc.id, doc.text.decode("utf-8"), doc.metadata_json,
                                       doc.embedding, offset, len(record), record_crc(record),
                                       doc.key))
                offset += len(record)
                if buffered >= TEXT_BUFFER_BYTES:
                    flush_text()
                if len(puts) >= BASE_FRAME_DOCUMENTS:
                    flush_frame(last=False)
            flush_text()
            flush_frame(last=True)
            cp = Checkpoint(text_synced=offset, zeroed_through=revision)
            journal.append(encode_frame(codec, kind=KIND_CHECKPOINT, sequence=revision,
                                        payload=encode_checkpoint(cp), version=FORMAT_VERSION,
                                        file_label=label, offset=journal.size()))
            text.sync()
            journal.sync()
            directory.sync_dir(name)
            directory.sync_dir("")
            return NewGeneration(name=name, locations=locations,
                                 bytes_written=journal.size() + text.handle.size())
        finally:
            journal.close()
            text.handle.close()


async def compact(core: StoreCore, indexer: Indexer, *, purge: bool) -> CompactReport:
    """The writer actor's compaction (see the module docstring for the steps and guarantees)."""
    directory = core.directory
    old = core.generation
    # A plain compaction also erases the old generation while a purge is pending (tombstones
    # written since it began: an interrupted purge's), rather than leave that purge undone.
    purge = purge or core.purge_pending
    before = await trio.to_thread.run_sync(generation_bytes, directory, old)
    async with indexer.io_lock:
        name = await trio.to_thread.run_sync(next_generation, directory)
        try:
            new = await trio.to_thread.run_sync(write_generation, core, name)
            await indexer.persist_into(name)
        except BaseException:
            with trio.CancelScope(shield=True):
                try:
                    await trio.to_thread.run_sync(lambda: remove_generation(directory, name, zero=True))
                except HmsError:
                    pass  # a stray generation is erased at the next open
            raise
        try:
            with map_errors("switching CURRENT", file=directory.describe(manifest.CURRENT_FILE)):
                await trio.to_thread.run_sync(write_current, directory, name)
        except BaseException as exc:
            # Whether the rename happened is unknown: only a reopen can tell which generation is
            # live (both are complete), so refuse further writes until then.
            core.broken = exc
            raise
        core.switch_generation(name, new.locations)
        indexer.switched_generation()
    removed = []
    for stray in stray_generations(directory, name):
        # The replaced generation is zeroed when purging; strays of an interrupted compaction
        # always (they may hold text an earlier purge was erasing).
        zero = purge or stray != old
        await trio.to_thread.run_sync(functools.partial(remove_generation, directory, stray, zero=zero))
        removed.append(stray)
    return CompactReport(generation=name, documents=len(new.locations), bytes_before=before,
                         bytes_after=new.bytes_written, purged=purge,
                         generations_removed=tuple(removed))
