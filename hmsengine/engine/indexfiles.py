"""The index's files: which in-memory segment each file of the live generation holds, and the
synchronous writes that keep them (worker threads; ``engine/indexer.py`` decides when).

A file holds a segment's live documents only, with only the terms they use
(``IndexFiles.file_segment``), so no index file carries a document that was dead when it was
written, nor a word only dead documents had (a purge's compaction writes the new generation's
index from the survivors alone; docs/SECURITY.md). The layout of the files and their manifest is
``index/persist.py``'s (docs/PERSISTED-FORMAT.md).
"""

from __future__ import annotations

import attrs

from ..index import persist
from ..index.persist import PersistedIndex, read_persisted
from ..index.segment import Segment, merge_segments, ready_for_queries
from ..index.snapshot import SegmentView
from .store import StoreCore


@attrs.define(eq=False)
class IndexFiles:
    """The persisted index of one open store: ``persisted`` maps each in-memory segment to its
    file in the live generation; ``pending``, a compaction's files for its new generation until
    the store switches to it (``switch``). Not thread-safe: one write at a time (the indexer
    holds its I/O lock around each)."""

    _core: StoreCore
    _analyzer: str
    _dim: int
    persisted: dict[Segment, str] = attrs.field(factory=dict)
    _counter: int = 0  # the last file number used in the live generation
    _pending: dict[Segment, str] = attrs.field(factory=dict)

    def names(self) -> list[str]:
        """The files of the live generation that hold segments of the current index."""
        return sorted(set(self.persisted.values()))

    def unpersisted(self, views: tuple[SegmentView, ...]) -> int:
        """The live documents of ``views`` that no file holds."""
        return sum(v.n_live for v in views if v.segment not in self.persisted)

    def load(self, read: PersistedIndex | None) -> tuple[list[tuple[Segment, str]], int]:
        """The persisted segments of the live generation, ready for queries, and how many files
        were rejected: ``read`` if it read that generation (the opener starts the reading beside
        recovery: ``read_persisted``), else read now. Worker thread."""
        core = self._core
        if read is None or read.generation != core.generation:
            read = read_persisted(core.directory, core.generation, core.codec,
                                  analyzer=self._analyzer, dim=self._dim)
        self._counter = max(self._counter, read.last_number)
        # The vectors' codes are left to the builder's coding task (Indexer._coding): the
        # open does not wait for them.
        return ([(ready_for_queries(segment, ids=True, vectors=False), file)
                 for segment, file in read.loaded],
                read.rejected)

    def file_segment(self, view: SegmentView) -> Segment | None:
        """What a file may hold of ``view``: its live documents and only the terms they use
        (term statistics recomputed), or None when none is live. Worker thread."""
        segment = view.segment
        if view.n_live == 0:
            return None
        if view.n_live == segment.n_docs and bool(segment.df.all()):
            return segment
        return merge_segments([segment], [view.live], dim=self._dim,
                              embedding_dim=self._core.table.embedding_dim, vector_codes=False)

    def write_generation(self, generation: str, views: list[SegmentView]) -> None:
        """Write every segment of ``views`` into ``generation`` (a compaction's new one) and its
        manifest, kept as pending until ``switch``. Worker thread."""
        core = self._core
        folder = f"{generation}/{persist.INDEX_DIR}"
        core.directory.makedirs(folder)
        files: dict[Segment, str] = {}
        for view in views:
            written = self.file_segment(view)
            if written is None:
                continue
            file = f"seg-{len(files) + 1:08d}.hsi"
            core.directory.atomic_write(f"{folder}/{file}",
                                        persist.encode_segment(written, core.codec, file))
            # Keyed by the in-memory segment: its live documents are the file's (documents that
            # die later are dead in both, at open as now).
            files[view.segment] = file
        persist.write_manifest(core.directory, generation, list(files.values()),
                               analyzer=self._analyzer, dim=self._dim)
        self._pending = files

    def switch(self) -> None:
        """The store now lives in the generation ``write_generation`` wrote."""
        self.persisted = self._pending
        self._counter = len(self.persisted)
        self._pending = {}

    def write(self, views: list[SegmentView]) -> list[str]:
        """Write the segments of ``views`` not yet on disk (their live documents,
        ``file_segment``), then the manifest, then drop unlisted files; the files listed.
        Worker thread."""
        core = self._core
        folder = f"{core.generation}/{persist.INDEX_DIR}"
        core.directory.makedirs(folder)
        files = []
        for view in views:
            segment = view.segment
            file = self.persisted.get(segment)
            if file is None:
                written = self.file_segment(view)
                if written is None:
                    continue
                self._counter += 1
                file = f"seg-{self._counter:08d}.hsi"
                core.directory.atomic_write(f"{folder}/{file}",
                                            persist.encode_segment(written, core.codec, file))
                self.persisted[segment] = file
            files.append(file)
        persist.write_manifest(core.directory, core.generation, files,
                               analyzer=self._analyzer, dim=self._dim)
        listed = set(files) | {"MANIFEST"}
        for name in core.directory.listdir(folder):
            if name not in listed:
                core.directory.remove(f"{folder}/{name}")
        live = {view.segment for view in views}
        self.persisted = {seg: f for seg, f in self.persisted.items() if seg in live}
        return files
