"""Recovery at open: replay the journal, truncate a torn tail, repair the text segment.

The steps, in order:

1. Scan the journal (storage/journal.py). Damage before the tail raises ``CorruptStore``; a torn
   tail is truncated (after the checks below, so an open that finds damage changes nothing) and
   the truncation fsynced before anything new is appended. When the generation holds a table
   snapshot (storage/tablesnap.py, written at the last clean close) that matches the journal's
   bytes, the table starts from it and only the frames after it are scanned and replayed;
   otherwise the whole journal is. A snapshot of this store that the journal no longer matches
   (shorter than it says, or other bytes before its end) proves the journal was cut or changed
   after a clean close: ``CorruptStore``, since a torn tail never reaches below a clean close.
2. Replay every transaction into the document table, in sequence order. Checkpoints tell which
   part of ``documents.text`` was already synced and which dead records were already zeroed.
3. Bring ``documents.text`` to exactly the end of the last record any journaled operation
   references (cutting records of unacknowledged writes, or extending a file a crash shortened),
   so no region is ever shared by two records.
4. Verify every live document's record written after the last checkpoint; a record a crash lost
   or tore is written again at the end of the segment from the text the journal carries.
5. Overwrite with zeros every record that died after the last checkpoint (a crash may have come
   between the durable delete and the zeroing).
6. If anything was unsynced, repaired or zeroed: fsync the segment and journal a checkpoint.

Damage is refused before anything is written: every check that can raise ``CorruptStore``
(the scan, the snapshot witness, the frames' payloads, ``documents.text`` shorter than a
checkpoint says was synced) runs before the first truncation or write, so a store that fails to
open is left byte for byte as it was, for a person (or a backup) to look at.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ..errors import CorruptStore, map_errors
from ..storage import tablesnap
from ..storage.journal import KIND_CHECKPOINT, Frame, ScanResult, scan
from ..storage.manifest import FORMAT_VERSION
from ..storage.segments import record_crc
from .state import CRC, KEY_STRIDE, LENGTH, OFFSET, REVISION, DocTable, doc_key, relocated
from .store import Counters, StoreCore
from .txn import PUT_TEXT, StoredPut, decode_checkpoint, decode_transaction
from .values import TOMBSTONE_PREFIX


@attrs.define
class _Replay:
    """What replaying the journal learns beyond the table: the checkpoint watermarks, where the
    last referenced record ends, and the records to repair or zero."""

    text_synced: int = 0
    zeroed_through: int = 0
    record_end: int = 0
    # (offset, length, revision at which it died) of every record replaced or deleted.
    dead: list[tuple[int, int, int]] = attrs.Factory(list)
    # Live documents whose records lie past the synced watermark, with the texts to repair them.
    unsynced: dict[str, StoredPut] = attrs.Factory(dict)


def recover(core: StoreCore, *, progress: Callable[[str], None] | None = None) -> None:
    """Replay and repair ``core``'s generation in place (runs in a worker thread at open): the
    module docstring's steps, in ``_scan_journal``, ``_replay``, ``_repair_text``. Everything
    that can find damage runs before the first write (``_truncate_torn_tail`` is the first)."""
    state = _Replay()
    result = _scan_journal(core, state, progress)
    _replay(core, result.frames, state)
    _check_text_size(core, state)
    # Nothing was found wrong: from here on recovery may cut and write.
    _truncate_torn_tail(core, result)
    moved, to_zero = _repair_text(core, state)
    core.text_synced, core.zeroed_through = state.text_synced, state.zeroed_through
    core.zero_records(to_zero)
    if moved or to_zero or core.text.handle.size() != state.text_synced:
        if progress:
            progress(f"repaired {len(moved)} text records, zeroed {len(to_zero)}")
        core.checkpoint(moved=moved)
    # Counters describe this open's activity, not recovery's bookkeeping.
    core.counters = Counters()


def _scan_journal(core: StoreCore, state: _Replay,
                  progress: Callable[[str], None] | None) -> ScanResult:
    """Step 1: the journal's valid frames (after the table snapshot, when one matches; the
    table then starts from it). ``CorruptStore`` for damage, and for a journal that a table
    snapshot of this store witnesses was cut or changed after a clean close. Writes nothing."""
    journal = core.journal
    where = core.directory.describe(journal.name)
    size = journal.size()
    if progress:
        progress(f"replaying {size} journal bytes")
    result = None
    with map_errors("reading the journal", file=where):
        snap, witness = _matching_snapshot(core, size)
        data = journal.read_at(0, size)
    if snap is not None:
        try:
            result = scan(data, codec=core.codec, where=where, file_label=core.journal_label,
                          max_version=FORMAT_VERSION, first_sequence=snap.sequence,
                          start=snap.journal_end)
        except CorruptStore:
            result = None  # the frames after it do not follow on: replay the whole journal
        else:
            _install(core.table, snap)
            core.snapshot_documents = len(snap.ids)
            core.snapshot_state = (snap.journal_end, snap.sequence, snap.text_synced)
            state.text_synced = state.record_end = snap.text_synced
            state.zeroed_through = snap.zeroed_through
            if progress:
                progress(f"table snapshot of {len(snap.ids)} documents; replaying "
                         f"{size - snap.journal_end} journal bytes after it")
    if result is None:
        # Damage the scan finds is named precisely (file, offset); only a journal whose frames
        # are all whole is refused for what the snapshot witnessed.
        result = scan(data, codec=core.codec, where=where, file_label=core.journal_label,
                      max_version=FORMAT_VERSION)
    del data
    if witness is not None:
        raise witness
    return result


def _truncate_torn_tail(core: StoreCore, result: ScanResult) -> None:
    """The journal cut back to its last whole frame, and the cut fsynced."""
    if result.torn_tail:
        with map_errors("truncating the journal's torn tail",
                        file=core.directory.describe(core.journal.name)):
            core.journal.truncate(result.valid_end)
            core.journal.sync()


def _check_text_size(core: StoreCore, state: _Replay) -> None:
    """``documents.text`` at least as long as a checkpoint says was synced, else damage."""
    text = core.text
    with map_errors("checking the text segment", file=text.where):
        size = text.handle.size()
    if size < state.text_synced:
        raise CorruptStore(
            f"documents.text is {size} bytes but {state.text_synced} were synced", file=text.where)


def _replay(core: StoreCore, frames: list[Frame], state: _Replay) -> None:
    """Step 2: every transaction into the table in sequence order; checkpoints move the
    watermarks (and the records an earlier recovery re-wrote)."""
    table = core.table
    where = core.directory.describe(core.journal.name)
    for frame in frames:
        if frame.kind == KIND_CHECKPOINT:
            cp = decode_checkpoint(frame.payload, where=where, offset=frame.offset)
            state.text_synced, state.zeroed_through = cp.text_synced, cp.zeroed_through
            for doc_id, rev, off, length, crc in cp.moved:
                entry = table.get(doc_id)
                if entry is not None and entry[REVISION] == rev:
                    table.entries.replace(doc_id, relocated(entry, off, length, crc))
                state.record_end = max(state.record_end, off + length)
            state.unsynced = {k: v for k, v in state.unsynced.items()
                              if (e := table.get(k)) is not None
                              and e[OFFSET] + e[LENGTH] > state.text_synced}
            continue
        ops, dim = decode_transaction(frame.payload, where=where, offset=frame.offset)
        if dim is not None:
            table.embedding_dim = dim
        rev = frame.sequence
        for position, op in enumerate(ops):
            if isinstance(op, tuple):
                op_id, _, meta, vector, offset, length, crc, key = op
                state.record_end = max(state.record_end, offset + length)
                if key is None:
                    key = doc_key(rev, position)
                old = table.put(op_id, (offset, length, crc, meta, vector, key // KEY_STRIDE, key))
                if offset + length > state.text_synced:
                    state.unsynced[op_id] = op
                else:
                    state.unsynced.pop(op_id, None)
            else:
                old = table.delete(op.id)
                state.unsynced.pop(op.id, None)
            if old is not None:
                state.dead.append((old[OFFSET], old[LENGTH], rev))
        table.revision = rev


def _repair_text(core: StoreCore, state: _Replay) -> tuple[list[tuple[str, int, int, int, int]],
                                                          list[tuple[int, int]]]:
    """Steps 3-5, after every check: ``documents.text`` cut or extended to the last referenced
    record, lost records re-written from the journal's texts; (moved records, records to zero)."""
    table = core.table
    text = core.text
    with map_errors("repairing the text segment", file=text.where):
        if text.handle.size() != state.record_end:
            text.handle.truncate(state.record_end)
        moved: list[tuple[str, int, int, int, int]] = []
        rewritten: list[tuple[int, int]] = []
        for doc_id, op in state.unsynced.items():
            entry = table.get(doc_id)
            if entry is None or text.is_intact(entry[OFFSET], entry[LENGTH], entry[CRC]):
                continue
            # The damaged copy may still hold some of the text: zero it like a dead record.
            rewritten.append((entry[OFFSET], entry[LENGTH]))
            offset = text.handle.size()
            record = text.encode_at(op[PUT_TEXT].encode("utf-8"), offset)
            text.handle.append(record)
            crc = record_crc(record)
            table.entries.replace(doc_id, relocated(entry, offset, len(record), crc))
            moved.append((doc_id, entry[REVISION], offset, len(record), crc))
    to_zero = [(off, length) for off, length, rev in state.dead
               if rev > state.zeroed_through] + rewritten
    return moved, to_zero


def _matching_snapshot(core: StoreCore, journal_size: int
                       ) -> tuple[tablesnap.TableSnapshot | None, CorruptStore | None]:
    """(the generation's table snapshot if it is whole and describes a prefix of the journal,
    of ``journal_size`` bytes, the damage it witnesses if it is this store's and the journal no
    longer matches it). Reads only the journal bytes its digest covers."""
    name = f"{core.generation}/{tablesnap.FILE_NAME}"
    if not core.directory.exists(name):
        return None, None
    try:
        raw = core.directory.read_bytes(name)
    except OSError:
        return None, None
    snap = tablesnap.decode(core.codec, name.encode(), raw, core.directory.describe(name))
    if snap is None or snap.store_id != core.format.store_id:
        return None, None  # damaged, of another store, or too old to say which store it is of
    where = core.directory.describe(core.journal.name)
    if snap.journal_end > journal_size:
        return None, CorruptStore(
            f"journal.log is {journal_size} bytes, but the store was closed cleanly with "
            f"{snap.journal_end} (table.snap): the journal was cut after the store was closed",
            file=where, offset=journal_size, hint=_DAMAGE_HINT)
    first = max(0, snap.journal_end - tablesnap.TAIL_BYTES)
    covered = core.journal.read_at(first, snap.journal_end - first)
    if tablesnap.journal_tail_digest(covered, len(covered)) != snap.tail_sha256:
        return None, CorruptStore(
            "journal.log does not hold the bytes the store was closed cleanly with (table.snap): "
            "it was changed or replaced after the store was closed",
            file=where, offset=first, hint=_DAMAGE_HINT)
    return snap, None


_DAMAGE_HINT = ("nothing was changed: restore the store directory from a backup or a snapshot "
                "(acknowledged writes would be lost by opening what is left)")


def _install(table: DocTable, snap: tablesnap.TableSnapshot) -> None:
    """Fill the (empty) table from a snapshot as columns: no DocEntry is built until a document
    is looked up, no JSON parsed (see state.Entries)."""
    table.entries.install(snap.ids, snap.columns, snap.metadata, snap.embeddings)
    table.tombstones.update(snap.ids[row] for row in snap.metadata.rows_starting_with(TOMBSTONE_PREFIX))
    table.revision = snap.sequence
    if snap.embedding_dim is not None:
        table.embedding_dim = snap.embedding_dim
