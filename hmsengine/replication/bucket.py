"""What a store's prefix holds: listing generations, where shipping resumes, deleting old ones.

Synchronous (the callers run these in worker threads). A generation counts for a restore only
once its ``generation.json`` marker exists; its usable journal is the run of segments that
starts at offset 0 and has no gap. Deleting a generation removes its marker first, so a
generation half deleted (a crash in between) is never chosen by a restore.
"""

from __future__ import annotations

import logging
import time

import attrs

from ..errors import Conflict, CorruptStore
from ..storage import generations, manifest
from ..storage.directory import FileHandle
from .client import ObjectStore
from .layout import (
    FORMAT_OBJECT,
    FormatRef,
    GenerationMarker,
    OtherRef,
    SegmentRef,
    decode_segment,
    marker_name,
    parse_key,
)

_log = logging.getLogger("hmsengine.replication")


@attrs.frozen(kw_only=True)
class GenerationListing:
    name: str
    segments: tuple[SegmentRef, ...]  # every segment object found, in journal order
    marker: bool
    formats: tuple[FormatRef, ...] = ()  # its format objects, by offset and time
    others: tuple[str, ...] = ()  # the keys of its index objects (files and index.json)

    @property
    def number(self) -> int:
        number = generations.generation_number(self.name)
        assert number is not None
        return number

    def usable(self) -> list[SegmentRef]:
        """The segments from offset 0 up to the first gap. Where two start at the same offset
        (an upload retried after its answer was lost, with more bytes the second time), the
        longer one: both hold the same journal bytes, and shipping went on from its end."""
        longest: dict[int, SegmentRef] = {}
        for ref in self.segments:
            if ref.end > ref.start and (ref.start not in longest or ref.end > longest[ref.start].end):
                longest[ref.start] = ref
        out: list[SegmentRef] = []
        end = 0
        while end in longest:
            out.append(longest[end])
            end = longest[end].end
        return out

    def gap(self) -> int | None:
        """Where a segment is missing: the end of the usable run when some segment starts
        beyond it (an object deleted or lost from the middle), else None."""
        end = self.shipped_end
        return end if any(ref.start > end for ref in self.segments) else None

    @property
    def shipped_end(self) -> int:
        usable = self.usable()
        return usable[-1].end if usable else 0


def list_generations(client: ObjectStore) -> dict[str, GenerationListing]:
    """Every generation under the prefix with its objects and whether it has a marker."""
    segments: dict[str, list[SegmentRef]] = {}
    formats: dict[str, list[FormatRef]] = {}
    others: dict[str, list[str]] = {}
    markers: set[str] = set()
    for info in client.list("gen-"):
        parsed = parse_key(info.key, info.size)
        if isinstance(parsed, SegmentRef):
            segments.setdefault(parsed.generation, []).append(parsed)
        elif isinstance(parsed, FormatRef):
            formats.setdefault(parsed.generation, []).append(parsed)
        elif isinstance(parsed, OtherRef):
            others.setdefault(parsed.generation, []).append(parsed.key)
        elif isinstance(parsed, str):
            markers.add(parsed)
    names = set(segments) | markers | set(formats) | set(others)
    return {name: GenerationListing(name=name, marker=name in markers,
                                    segments=tuple(sorted(segments.get(name, ()),
                                                          key=lambda r: (r.start, r.end))),
                                    formats=tuple(sorted(formats.get(name, ()),
                                                         key=lambda r: (r.offset, r.changed_ms))),
                                    others=tuple(sorted(others.get(name, ()))))
            for name in sorted(names)}


def read_marker(client: ObjectStore, generation: str) -> GenerationMarker | None:
    found = client.get(marker_name(generation))
    if found is None:
        return None
    return GenerationMarker.from_bytes(found[0], where=client.describe(marker_name(generation)))


def delete_generations(client: ObjectStore, listings: list[GenerationListing]) -> int:
    """Delete whole generations (markers first); the number of objects deleted."""
    if not listings:
        return 0
    client.delete([marker_name(g.name) for g in listings if g.marker])
    keys = [ref.key for g in listings for ref in g.segments]
    keys += [ref.key for g in listings for ref in g.formats]
    keys += [key for g in listings for key in g.others]
    client.delete(keys)
    return len(keys) + sum(1 for g in listings if g.marker)


def prune(client: ObjectStore, current: str, *, purge: bool, retention_s: float) -> int:
    """After ``current``'s marker is written: delete every older generation when ``purge``;
    otherwise those replaced (by the next one's marker) more than ``retention_s`` ago."""
    listings = list_generations(client)
    number = generations.generation_number(current) or 0
    older = [g for g in listings.values() if g.number < number]
    if purge:
        doomed = older
    else:
        cutoff = time.time() * 1000 - retention_s * 1000
        later = sorted((g for g in listings.values() if g.marker), key=lambda g: g.number)
        doomed = []
        for g in older:
            successor = next((s for s in later if s.number > g.number), None)
            marker = read_marker(client, successor.name) if successor is not None else None
            if not g.marker or (marker is not None and marker.created_ms < cutoff):
                doomed.append(g)
    count = delete_generations(client, doomed)
    if count:
        _log.info("deleted %d objects of %d older generation(s) under %s%s", count, len(doomed),
                  client.target.url, " (purge)" if purge else "")
    return count


@attrs.frozen(kw_only=True)
class ShipStart:
    """Where shipping resumes at open."""

    generation: str
    shipped: int  # bytes of this generation's journal already in the bucket
    marker: bool  # its generation.json is there
    base_end: int  # the marker is written once this much is shipped
    purge_pending: bool  # delete older generations once the marker is written
    # Where the local format.json must be uploaded as this generation's format object (None:
    # the bucket's newest one already holds these bytes).
    format_offset: int | None = 0
    index_keys: frozenset[str] = frozenset()  # this generation's index objects in the bucket


def check_format(client: ObjectStore, format_bytes: bytes, store_id: str) -> bytes:
    """Put the store's format.json in the bucket, or check that the one there is this store's;
    the bucket's bytes (written once: the store as its first shipment found it; its settings
    as they change are in the generations' format objects)."""
    from .client import ObjectExists

    try:
        client.put(FORMAT_OBJECT, format_bytes, create=True)
        return format_bytes
    except ObjectExists:
        pass
    found = client.get(FORMAT_OBJECT)
    if found is None:
        raise Conflict(f"{client.describe(FORMAT_OBJECT)} vanished while it was being checked")
    theirs = found[0]
    try:
        other = manifest.StoreFormat.from_json(theirs, where=client.describe(FORMAT_OBJECT)).store_id
    except CorruptStore:
        raise
    if other != store_id:
        raise Conflict(
            f"{client.target.url} holds another store (id {other}), not this one ({store_id})",
            hint="give each store its own prefix, or restore this prefix with `hms restore`")
    return theirs


def _last_sequence(client: ObjectStore, listing: GenerationListing) -> int:
    """The revision the shipped part of a generation ends at (0 if nothing was shipped)."""
    usable = listing.usable()
    if not usable:
        return 0
    found = client.get(usable[-1].key)
    if found is None:
        raise Conflict(f"{client.describe(usable[-1].key)} vanished while it was being checked")
    return decode_segment(found[0], where=client.describe(usable[-1].key), ref=usable[-1]).last_sequence


def restored_origin(origin: str | None) -> tuple[str, int] | None:
    """The ``(generation, revision)`` a restore rebuilt a generation from, as its base frames
    record it (``"origin": "restore:gen-NNNNNNNN:REVISION"``), or None."""
    parts = (origin or "").split(":")
    if len(parts) != 3 or parts[0] != "restore" or generations.generation_number(parts[1]) is None \
            or not parts[2].isdigit():
        return None
    return parts[1], int(parts[2])


def _format_offset(client: ObjectStore, listing: GenerationListing | None, format_bytes: bytes,
                   journal_end: int) -> int | None:
    """Where the local format.json goes in the bucket at open: offset 0 of a generation that
    has none yet; nowhere if its newest one holds the same bytes; else the journal's end (its
    settings changed while this store was not shipping: from here on, as far as is known)."""
    if listing is None or not listing.formats:
        return 0
    newest = listing.formats[-1]
    found = client.get(newest.key)
    return None if found is not None and found[0] == format_bytes else journal_end


def plan_resume(client: ObjectStore, *, generation: str, journal: FileHandle,
                restored: tuple[str, int] | None, format_bytes: bytes) -> ShipStart:
    """Compare the local store with the bucket and say where shipping resumes.

    ``Conflict`` when the bucket is ahead of this directory (a newer generation, or more of
    this one than the local journal holds, or different bytes; for a restored copy, anything
    shipped since the state it was restored from): another node wrote the store since this
    copy was made, and writing here would fork it. ``restored``: where a restore rebuilt the
    local generation from (not a purge, so older generations may be kept)."""
    listings = list_generations(client)
    local_number = generations.generation_number(generation) or 0
    newest = max((g.number for g in listings.values()), default=0)
    local_end = journal.size()
    if newest > local_number:
        raise Conflict(
            f"{client.target.url} holds generation {newest}, newer than this directory's "
            f"{local_number}: another node has written this store since",
            hint="restore the store from the bucket (`hms restore`, or `hms serve --takeover`) "
                 "instead of writing this copy")
    mine = listings.get(generation)
    # A generation switch the shipper did not see (a crash after a compaction): unless a
    # restore wrote this generation, it may have been a purge, so the older ones must go.
    unseen_switch = any(g.number < local_number for g in listings.values()) and not restored
    if mine is None and restored is not None:
        source = listings.get(restored[0])
        if newest != generations.generation_number(restored[0]) or source is None \
                or _last_sequence(client, source) != restored[1]:
            raise Conflict(
                f"this directory was restored from {restored[0]} at revision {restored[1]} "
                f"of {client.target.url}, which has been written since (or this was a "
                "point-in-time restore): shipping it would fork the store",
                hint="restore the latest state again, or replicate this copy to a new prefix")
    format_offset = _format_offset(client, mine, format_bytes, local_end)
    if mine is None:
        return ShipStart(generation=generation, shipped=0, marker=False, base_end=local_end,
                         purge_pending=unseen_switch, format_offset=format_offset)
    shipped = mine.shipped_end
    if shipped > local_end:
        raise Conflict(
            f"{client.target.url} holds {shipped} bytes of {generation}'s journal, this directory "
            f"only {local_end}: another node has written this store since",
            hint="restore the store from the bucket instead of writing this copy")
    if shipped:
        last = mine.usable()[-1]
        found = client.get(last.key)
        if found is None:
            raise Conflict(f"{client.describe(last.key)} vanished while it was being checked")
        segment = decode_segment(found[0], where=client.describe(last.key), ref=last)
        if journal.read_at(last.start, last.end - last.start) != segment.body:
            raise Conflict(
                f"{client.describe(last.key)} differs from this directory's journal: the store "
                "forked (another node wrote the same generation)",
                hint="restore the store from the bucket, or give this copy its own prefix")
    return ShipStart(generation=generation, shipped=shipped, marker=mine.marker,
                     base_end=local_end if not mine.marker else 0,
                     purge_pending=unseen_switch and not mine.marker, format_offset=format_offset,
                     index_keys=frozenset(k for k in mine.others
                                          if k.startswith(f"{generation}/index/")))
