"""Restore a store from its replica in a bucket: the latest state, or as it was known at a time.

``hms restore --from s3://bucket/prefix[/tenant] --store DIR [--known-at TIME]`` and
``hms serve --takeover`` call :func:`restore_from_bucket`. For one store:

1. Read the bucket's ``format.json`` (the store's own, byte for byte) and check the key
   against it (``WrongKey``); list the generations; keep those with a ``generation.json``
   whose store id and format digest match.
2. Take the newest of them (with ``known_at``: the newest whose base was committed by then).
   Download its segments in journal order (a few at a time), verify each one's sha256 and range
   (``CorruptStore`` naming the object), then every frame's checksums and, for an encrypted
   store, its authentication, exactly as recovery does.
3. Replay the frames into a table of documents: base frames set it, transactions change it,
   in order; with ``known_at`` the replay stops before the first transaction committed later
   (its ``ts``), so the result is exactly a prefix of the commit order: nothing half-applied.
4. Write ``DIR`` as a compaction would (engine/compaction.py ``write_base_generation``): the
   store's ``format.json`` as it was at the replayed point (the generation's format object
   with the highest journal offset at or before it: the same store id, analyzer, dimensions
   and key, and the settings, such as the embedder's identity, the store had then), one
   generation numbered above every generation in the bucket, holding the documents with their
   version keys and the revision, so search ties, ``revision`` and every fact's stamps are as
   they were; and the table snapshot a clean close writes.
5. Copy the generation's persisted index files (``index.json``) into it when the replay
   reached the journal offset they reflect: the first open adopts every document whose
   version they hold, and tokenizes only the others (those committed after the index was last
   persisted). They are derived: a missing or damaged one is logged and left out (the open
   then re-indexes), never an error.

The bucket holds ciphertext only for an encrypted store; decrypting needs the key here, and
the restored store is sealed with the same key.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import trio

from ..errors import Conflict, CorruptStore, InvalidRequest, NotFound, WrongKey, map_errors
from ..index import persist
from ..replication.bucket import GenerationListing, list_generations, read_marker
from ..replication.client import ObjectStore
from ..replication.layout import (
    FORMAT_OBJECT,
    INDEX_LISTING,
    IndexListing,
    SegmentRef,
    decode_segment,
    sha256_hex,
)
from ..replication.lease import acquire_waiting, holder_name
from ..replication.options import ReplicaTarget, Replication, parse_target
from ..storage import generations, manifest, tablesnap
from ..storage.codec import PLAIN, Codec
from ..storage.directory import FsDirectory
from ..storage.journal import HEADER, KIND_BASE, KIND_TRANSACTION, frame_aad, iter_frame_offsets
from ..storage.keys import SealedCodec, open_encryption
from ..storage.manifest import FORMAT_VERSION, StoreFormat
from .compaction import BaseDocument, write_base_generation
from .state import KEY_STRIDE, doc_key
from .txn import DecodedTransaction, decode_transaction_full
from .values import TOMBSTONE_PREFIX

PREFETCH = 4
_log = logging.getLogger("hmsengine.replication")


@attrs.frozen(kw_only=True)
class RestoreReport:
    """What one restored store holds and where it came from."""

    source: str  # s3://bucket/prefix of the store
    store: str  # the directory written
    tenant: str | None  # the tenant's name when a whole serve prefix was restored
    generation: str  # the bucket generation it was rebuilt from
    revision: int
    documents: int
    tombstones: int
    known_at: int | None
    last_commit_ms: int | None  # the commit time of the last transaction replayed
    objects: int
    bytes: int
    seconds: float
    index_files: int = 0  # persisted index files copied in (its first open adopts them)
    index_note: str | None = None  # why the index was left to the first open, if it was


@attrs.define
class _State:
    """The documents as the replay has them: id -> (text, metadata JSON, embedding, key)."""

    docs: dict[str, tuple[str, str | None, np.ndarray | None, int]] = attrs.field(factory=dict)
    revision: int = 0
    embedding_dim: int | None = None
    last_ts: int | None = None
    journal_end: int = 0  # the end offset, in the generation's journal, of the last frame applied
    objects: int = 0
    bytes: int = 0
    index_files: int = 0
    index_note: str | None = None
    max_bytes: int | None = None  # the most the restore may download (None: no limit)

    def downloaded(self, size: int, where: str) -> None:
        """Count an object's bytes; over ``max_bytes`` is ``InvalidRequest`` (nothing kept)."""
        self.objects += 1
        self.bytes += size
        if self.max_bytes is not None and self.bytes > self.max_bytes:
            raise InvalidRequest(f"restore: the replica holds more than --max-bytes "
                                 f"({self.max_bytes} bytes) by {where}",
                                 hint="raise --max-bytes if the replica is this large")

    def apply(self, decoded: DecodedTransaction, sequence: int, base: bool, end: int) -> None:
        if decoded.dim is not None:
            self.embedding_dim = decoded.dim
        docs = self.docs
        for position, op in enumerate(decoded.ops):
            if isinstance(op, tuple):
                op_id, text, meta, vector, _, _, _, kept = op
                key = kept if base and kept is not None else doc_key(sequence, position)
                docs[op_id] = (text, meta, vector, key)
            else:
                docs.pop(op.id, None)
        self.revision = sequence
        self.journal_end = end
        if decoded.ts is not None:
            self.last_ts = decoded.ts


class _Stop(Exception):
    """The replay reached a transaction committed after ``known_at``."""


def _codec(fmt: StoreFormat, key: str | bytes | None) -> Codec:
    if fmt.encryption is not None:
        return SealedCodec(open_encryption(key, fmt.encryption, fmt.store_id))
    if key is not None:
        raise WrongKey("the replicated store is not encrypted: restore it without a key")
    return PLAIN


def _segments(client: ObjectStore, refs: list[SegmentRef],
              state: _State) -> Iterator[tuple[SegmentRef, bytes]]:
    """Download ``refs`` in order, ``PREFETCH`` at a time; yield each verified body."""
    with concurrent.futures.ThreadPoolExecutor(PREFETCH, thread_name_prefix="hms-restore") as pool:
        futures = [pool.submit(client.get, ref.key) for ref in refs[:PREFETCH]]
        for n, ref in enumerate(refs):
            found = futures[n].result()
            if n + PREFETCH < len(refs):
                futures.append(pool.submit(client.get, refs[n + PREFETCH].key))
            futures[n] = None  # type: ignore[call-overload]  # let the bytes go
            where = client.describe(ref.key)
            if found is None:
                raise CorruptStore("replica segment is missing (listed, then gone)", file=where)
            state.downloaded(len(found[0]), where)
            yield ref, decode_segment(found[0], where=where, ref=ref).body


def _replay(client: ObjectStore, listing: GenerationListing, codec: Codec, known_at: int | None,
            state: _State) -> bool:
    """Replay ``listing``'s journal into ``state``; False if its base came after ``known_at``
    (then an older generation must be used)."""
    label = f"{listing.name}/{manifest.JOURNAL_FILE}".encode()
    sequence = 0
    unstamped: list[tuple[DecodedTransaction, int, bool, int]] = []  # frames without ts wait
    first = True
    for ref, body in _segments(client, listing.usable(), state):
        where = client.describe(ref.key)
        bounds = list(iter_frame_offsets(body, FORMAT_VERSION))
        if not bounds or bounds[-1][1] != len(body):
            bad = bounds[-1][1] if bounds else 0
            raise CorruptStore("replica segment holds a damaged journal frame", file=where,
                               offset=ref.start + bad)
        for pos, end in bounds:
            _m, version, kind, flags, seq, _len, _crc, _r, _h = HEADER.unpack_from(body, pos)
            offset = ref.start + pos
            expected = sequence + 1 if kind == KIND_TRANSACTION else sequence
            if kind != KIND_BASE and seq != expected:
                raise CorruptStore(f"journal sequence gap in the replica: expected {expected}, "
                                   f"found {seq}", file=where, offset=offset)
            sequence = seq
            if kind not in (KIND_BASE, KIND_TRANSACTION):
                first = False
                if not unstamped:  # (after frames left out for now, it may be left out too)
                    state.journal_end = ref.start + end
                continue  # checkpoints only concern the text segment
            payload = codec.decode(flags, body[pos + HEADER.size : end],
                                   aad=frame_aad(label, offset, version), where=where, offset=offset)
            decoded = decode_transaction_full(payload, where=where, offset=offset)
            if known_at is not None:
                if first and kind == KIND_BASE and decoded.ts is not None and decoded.ts > known_at:
                    return False
                if decoded.ts is None:
                    unstamped.append((decoded, seq, kind == KIND_BASE, ref.start + end))
                    first = False
                    continue
                if decoded.ts > known_at:
                    raise _Stop
                for earlier, earlier_seq, base, earlier_end in unstamped:
                    state.apply(earlier, earlier_seq, base, earlier_end)
                unstamped.clear()
            first = False
            state.apply(decoded, seq, kind == KIND_BASE, ref.start + end)
    # Frames without a time after the last stamped one: when they were committed is unknown,
    # so a restore as known at a time leaves them out (a latest restore never gets here).
    return True


def _candidates(client: ObjectStore, format_bytes: bytes, fmt: StoreFormat) -> list[GenerationListing]:
    """Restorable generations, newest first, their markers checked against the format."""
    listings = list_generations(client)
    out = []
    for listing in sorted(listings.values(), key=lambda g: g.number, reverse=True):
        if not listing.marker:
            continue
        marker = read_marker(client, listing.name)
        where = client.describe(f"{listing.name}/generation.json")
        if marker is None or marker.store_id != fmt.store_id:
            raise CorruptStore("replica generation marker names another store", file=where)
        if marker.format_sha256 != sha256_hex(format_bytes):
            raise CorruptStore("the bucket's format.json does not match the generation marker",
                               file=client.describe(FORMAT_OBJECT))
        if listing.shipped_end < marker.base_end or listing.gap() is not None:
            missing = listing.shipped_end
            raise CorruptStore(f"replica segment starting at journal offset {missing} is missing",
                               file=client.describe(f"{listing.name}/seg-{missing:020d}-*"))
        out.append(listing)
    return out


def _format_at(client: ObjectStore, listing: GenerationListing, identity: StoreFormat,
               journal_end: int, known_at: int | None) -> tuple[bytes, StoreFormat]:
    """The store's format.json as it was at ``journal_end`` of ``listing``'s journal (and, with
    ``known_at``, as known then): the last of its format objects from an offset at or before it
    (changed by ``known_at``), or the first one; checked to be the same store as the bucket's
    ``format.json`` (id, key parameters, analyzer, dimension, creation)."""
    if not listing.formats:
        raise CorruptStore("the generation's format object is missing",
                           file=client.describe(f"{listing.name}/format-*.json"))
    before = [ref for ref in listing.formats if ref.offset <= journal_end
              and (known_at is None or ref.changed_ms <= known_at)]
    ref = before[-1] if before else listing.formats[0]
    where = client.describe(ref.key)
    found = client.get(ref.key)
    if found is None:
        raise CorruptStore("replica format object is missing (listed, then gone)", file=where)
    fmt = StoreFormat.from_json(found[0], where=where)
    if (fmt.store_id, fmt.encryption, fmt.analyzer, fmt.dim, fmt.created_ms) != (
            identity.store_id, identity.encryption, identity.analyzer, identity.dim,
            identity.created_ms):
        raise CorruptStore("replica format object describes another store than format.json",
                           file=where)
    return found[0], fmt


def _index_listing(client: ObjectStore, listing: GenerationListing, fmt: StoreFormat,
                   state: _State) -> IndexListing | None:
    """The generation's persisted index, if the replay covers the journal it reflects (a
    restore as known at an earlier time does not: it could hold later documents)."""
    key = f"{listing.name}/{INDEX_LISTING}"
    if key not in listing.others:
        state.index_note = "the bucket holds no persisted index for this generation"
        return None
    try:
        found = client.get(key)
        if found is None:
            raise CorruptStore("replica index listing is missing", file=client.describe(key))
        index = IndexListing.from_bytes(found[0], where=client.describe(key))
    except CorruptStore as exc:
        state.index_note = f"{exc.message}: {client.describe(key)}"
        _log.warning("restore: the persisted index is left out: %s", state.index_note)
        return None
    if (index.generation, index.store_id, index.analyzer, index.dim) != (
            listing.name, fmt.store_id, fmt.analyzer, fmt.dim):
        state.index_note = f"{client.describe(key)} describes another generation or store"
        _log.warning("restore: the persisted index is left out: %s", state.index_note)
        return None
    if index.journal_end > state.journal_end:
        state.index_note = "the persisted index reflects a later state than the one restored"
        return None
    return index


def _copy_index(client: ObjectStore, directory: FsDirectory, generation: str,
                index: IndexListing, state: _State) -> None:
    """Download ``index``'s files into ``generation`` and list them in its index manifest;
    a missing or damaged one leaves the whole index out (logged): it is derived."""
    folder = f"{generation}/{persist.INDEX_DIR}"
    directory.makedirs(folder)
    written: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(PREFETCH, thread_name_prefix="hms-restore") as pool:
        keys = [f"{index.generation}/{f.key}" for f in index.files]
        futures = [pool.submit(client.get, k) for k in keys[:PREFETCH]]
        for n, entry in enumerate(index.files):
            found = futures[n].result()
            if n + PREFETCH < len(keys):
                futures.append(pool.submit(client.get, keys[n + PREFETCH]))
            futures[n] = None  # type: ignore[call-overload]  # let the bytes go
            if found is None or len(found[0]) != entry.size or sha256_hex(found[0]) != entry.sha256:
                problem = "is missing" if found is None else "fails its sha256"
                state.index_note = f"replica index file {problem}: {client.describe(keys[n])}"
                _log.warning("restore: the persisted index is left out: %s", state.index_note)
                for name in written:
                    directory.remove(f"{folder}/{name}")
                return
            state.downloaded(len(found[0]), client.describe(keys[n]))
            directory.atomic_write(f"{folder}/{entry.name}", found[0])
            written.append(entry.name)
    persist.write_manifest(directory, generation, written, analyzer=index.analyzer, dim=index.dim)
    state.index_files = len(written)


def _check_destination(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InvalidRequest(f"--store {dest}: exists and is not an empty directory",
                             hint="restore into a new or empty directory")


def _restore_one(client: ObjectStore, dest: Path, known_at: int | None,
                 key: str | bytes | None, max_bytes: int | None = None) -> tuple[str, _State]:
    _check_destination(dest)
    found = client.get(FORMAT_OBJECT)
    if found is None:
        raise NotFound(f"no replicated store at {client.target.url}")
    format_bytes = found[0]
    fmt = StoreFormat.from_json(format_bytes, where=client.describe(FORMAT_OBJECT))
    codec = _codec(fmt, key)
    candidates = _candidates(client, format_bytes, fmt)
    if not candidates:
        raise NotFound(f"{client.target.url} has no complete generation yet",
                       hint="the first upload of a new store takes up to its lag bound")
    if known_at is not None and known_at < fmt.created_ms:
        raise NotFound(f"the store at {client.target.url} was created after {known_at} ms")
    for listing in candidates:
        state = _State(max_bytes=max_bytes)
        try:
            if not _replay(client, listing, codec, known_at, state):
                continue
        except _Stop:
            pass
        chosen_bytes, chosen = _format_at(client, listing, fmt, state.journal_end, known_at)
        index = _index_listing(client, listing, chosen, state)
        _write_store(dest, chosen_bytes, chosen, codec, state,
                     generation=generations.generation_name(candidates[0].number + 1),
                     origin=f"restore:{listing.name}:{state.revision}",
                     index=None if index is None else (client, index))
        return listing.name, state
    raise NotFound(f"no generation left in {client.target.url} reaches back to {known_at} ms",
                   hint="older generations were removed by a purge or their retention")


def _write_store(dest: Path, format_bytes: bytes, fmt: StoreFormat, codec: Codec, state: _State,
                 *, generation: str, origin: str,
                 index: tuple[ObjectStore, IndexListing] | None) -> None:
    _check_destination(dest)
    created = not dest.exists()
    directory = FsDirectory(dest)
    directory.lock()
    try:
        with map_errors("writing the restored store", file=str(dest)):
            directory.atomic_write(manifest.FORMAT_FILE, format_bytes)
            ordered = sorted(state.docs.items(), key=lambda item: item[1][3])
            documents = (BaseDocument(doc_id, text.encode("utf-8"), meta, emb, key)
                         for doc_id, (text, meta, emb, key) in ordered)
            embedding_dim = state.embedding_dim or fmt.embedding_dim
            new = write_base_generation(directory, generation, codec, documents,
                                        revision=state.revision, embedding_dim=embedding_dim,
                                        commit_ms=state.last_ts, origin=origin,
                                        compress_small=False)
            generations.write_current(directory, generation)
            _write_table_snapshot(directory, generation, codec, state, ordered, new.locations,
                                  embedding_dim, fmt.store_id)
            if index is not None:
                _copy_index(index[0], directory, generation, index[1], state)
    except BaseException:
        directory.unlock()
        # Nothing half written stays behind: the directory is as it was (absent, or empty).
        for child in dest.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        if created:
            dest.rmdir()
        raise
    directory.unlock()


def _write_table_snapshot(directory: FsDirectory, generation: str, codec: Codec, state: _State,
                          ordered: list[tuple[str, tuple[str, str | None, np.ndarray | None, int]]],
                          locations: dict[str, tuple[int, int, int]],
                          embedding_dim: int | None, store_id: str) -> None:
    """The table snapshot a clean close would write (storage/tablesnap.py), so the first open
    starts from it instead of replaying every base frame again."""
    journal = directory.open_file(f"{generation}/{manifest.JOURNAL_FILE}")
    text = directory.open_file(f"{generation}/{manifest.TEXT_FILE}")
    try:
        end = journal.size()
        tail = journal.read_at(max(0, end - tablesnap.TAIL_BYTES), min(end, tablesnap.TAIL_BYTES))
        text_size = text.size()
    finally:
        journal.close()
        text.close()
    ids = [doc_id for doc_id, _ in ordered]
    columns = np.asarray([(*locations[doc_id], key // KEY_STRIDE, key)
                          for doc_id, (_t, _m, _e, key) in ordered], dtype=np.int64).reshape(-1, 5)
    name = f"{generation}/{tablesnap.FILE_NAME}"
    directory.atomic_write(name, tablesnap.encode(
        codec, name.encode(), journal_end=end, journal_tail=tail, sequence=state.revision,
        text_synced=text_size, store_id=store_id, zeroed_through=state.revision,
        embedding_dim=embedding_dim,
        ids=ids, metadata=[meta for _, (_t, meta, _e, _k) in ordered], columns=columns,
        embeddings=[emb for _, (_t, _m, emb, _k) in ordered]))


async def replicated_stores(target: ReplicaTarget) -> list[str]:
    """The names under ``target`` that hold a replicated store (``name/format.json``): the
    tenants of an ``hms serve --replicate-to`` prefix."""
    def names() -> list[str]:
        out = []
        for name in ObjectStore(target).list_dirs(""):
            try:
                child = target.child(name)
            except InvalidRequest:
                continue  # not a name a store is shipped under
            if ObjectStore(child).head(FORMAT_OBJECT) is not None:
                out.append(name)
        return out

    return await trio.to_thread.run_sync(names)


async def restore_from_bucket(source: str | ReplicaTarget, store: str | os.PathLike[str], *,
                              known_at: int | None = None, key: str | bytes | None = None,
                              max_bytes: int | None = None) -> list[RestoreReport]:
    """Rebuild the store at ``source`` into the new directory ``store``; if ``source`` holds
    the tenants of ``hms serve`` (``prefix/<tenant>/``), each into ``store/<tenant>``.

    Writes nothing into a directory that is not empty; verifies every object and every frame
    it reads (``CorruptStore`` names a damaged one). The store is written whole (journal, text,
    table snapshot, the format.json of the restored point, the persisted index files when they
    fit: see the module docstring) and fsynced. ``known_at`` (ms): the state as committed by
    then. The key of an encrypted store is needed (``WrongKey``). ``max_bytes``: the most one
    store's restore may download (``InvalidRequest`` beyond it; default no limit)."""
    target = parse_target(source, "--from")
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int)
                                  or max_bytes < 1):
        raise InvalidRequest(f"max_bytes: expected a positive integer, got {max_bytes!r}")
    dest = Path(store)
    client = await trio.to_thread.run_sync(ObjectStore, target)
    if await trio.to_thread.run_sync(client.head, FORMAT_OBJECT) is not None:
        jobs: list[tuple[str | None, ObjectStore, Path]] = [(None, client, dest)]
    else:
        jobs = [(name, ObjectStore(target.child(name)), dest / name)
                for name in await replicated_stores(target)]
        if not jobs:
            raise NotFound(f"no replicated store or tenant under {target.url}")
    return [await _restore_into(name, job_client, path, known_at, key, max_bytes)
            for name, job_client, path in jobs]


async def _restore_into(tenant: str | None, client: ObjectStore, dest: Path,
                        known_at: int | None, key: str | bytes | None,
                        max_bytes: int | None) -> RestoreReport:
    started = time.perf_counter()
    generation, state = await trio.to_thread.run_sync(_restore_one, client, dest, known_at, key,
                                                      max_bytes)
    tombstones = sum(1 for _t, meta, _e, _k in state.docs.values()
                     if meta is not None and meta.startswith(TOMBSTONE_PREFIX))
    return RestoreReport(source=client.target.url, store=str(dest), tenant=tenant,
                         generation=generation, revision=state.revision,
                         documents=len(state.docs) - tombstones, tombstones=tombstones,
                         known_at=known_at, last_commit_ms=state.last_ts, objects=state.objects,
                         bytes=state.bytes, seconds=time.perf_counter() - started,
                         index_files=state.index_files, index_note=state.index_note)


def report_json(report: RestoreReport) -> dict[str, Any]:
    return attrs.asdict(report)


async def adopt(path: str | os.PathLike[str], options: Replication, *, takeover: str | None,
                announce: Callable[[str], None] | None = None) -> bool:
    """Prepare the store directory ``path`` that ``Engine.open(path, replicate_to=options)``
    opens next, on a node that may not have served it before (``hms serve``'s tenants).

    - ``path`` holds no store and the bucket holds none: nothing to do (a new store).
    - ``path`` holds no store, the bucket does: without ``takeover``, ``Conflict`` (opening
      would create an empty store beside it); with it, wait for the lease to be released or
      to expire (``"now"``: take it at once, the operator says the old node is gone), take it
      in this node's name, and restore the latest state into ``path`` (True).
    - ``path`` holds a store: with ``takeover``, wait for the lease the same way; the open then
      checks that the bucket is not ahead of this copy.
    The engine's open then finds the lease its own."""
    dest = Path(path)
    client = await trio.to_thread.run_sync(ObjectStore, options.target)
    local = (dest / manifest.FORMAT_FILE).exists()
    if local and takeover is None:
        return False
    found = await trio.to_thread.run_sync(client.get, FORMAT_OBJECT)
    if found is None:
        return False
    if takeover is None:
        raise Conflict(f"{client.target.url} holds this store and this node has no copy of it",
                       hint="start `hms serve` with --takeover to take it over from its node")
    fmt = StoreFormat.from_json(found[0], where=client.describe(FORMAT_OBJECT))
    await acquire_waiting(client, holder=holder_name(options.node, dest), store_id=fmt.store_id,
                          ttl=options.lease_ttl, now=takeover == "now", announce=announce)
    if local:
        return False
    await trio.to_thread.run_sync(_restore_one, client, dest, None, None)
    return True
