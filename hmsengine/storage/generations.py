"""Generation directories and the ``CURRENT`` pointer: naming, creating, opening, switching,
listing and removing them.

A store's live files sit in one generation directory (``gen-00000001/``: ``journal.log`` and
``documents.text``, later also ``table.snap`` and ``index/``); ``CURRENT`` names it. A
compaction writes the next generation beside the live one, switches ``CURRENT``, then removes
the old one. ``CURRENT`` is replaced atomically (temp file, fsync, rename, directory fsync), so a
crash leaves either generation live, never neither; a generation that ``CURRENT`` does not name
is a stray of an interrupted compaction and is erased (zeroed first: it may hold purged text).

Synchronous and trio-free, like all of ``storage/``: the engine calls these from worker threads.
"""

from __future__ import annotations

import re
import zlib

from ..errors import CorruptStore, InvalidRequest, map_errors
from .codec import Codec
from .directory import Directory, FileHandle, MemoryDirectory
from .journal import JournalFile
from .manifest import CURRENT_FILE, FORMAT_FILE, FORMAT_VERSION, JOURNAL_FILE, TEXT_FILE
from .segments import TextSegment

_GEN_RE = re.compile(r"^gen-(\d{8})$")
ZERO_CHUNK = 1024 * 1024


# -- naming ----------------------------------------------------------------------------------

def generation_name(number: int) -> str:
    return f"gen-{number:08d}"


def generation_number(name: str) -> int | None:
    m = _GEN_RE.match(name)
    return int(m.group(1)) if m else None


def next_generation(directory: Directory) -> str:
    """The name after the highest generation present (live or stray)."""
    numbers = [n for name in directory.listdir("") if (n := generation_number(name)) is not None]
    return generation_name(max(numbers, default=0) + 1)


def stray_generations(directory: Directory, live: str) -> list[str]:
    """Generation directories other than the live one (left by an interrupted compaction)."""
    return [n for n in directory.listdir("") if generation_number(n) is not None and n != live]


def check_store_directory(directory: Directory) -> None:
    """Refuse to turn a non-empty directory that is not a store into one."""
    ours = {FORMAT_FILE, CURRENT_FILE, "LOCK", FORMAT_FILE + ".tmp", CURRENT_FILE + ".tmp"}
    foreign = [
        n for n in directory.listdir("") if n not in ours and generation_number(n) is None
    ]
    if foreign and not directory.exists(FORMAT_FILE):
        raise InvalidRequest(
            f"{directory.describe('')} is not empty and is not an hmsengine store "
            f"(found {', '.join(foreign[:3])})",
            hint="give Engine.open an empty or new directory, or an existing store",
        )


def check_not_headless(directory: Directory) -> None:
    """Refuse (``CorruptStore``) a store whose ``format.json`` is gone while its other files are
    there: creation writes ``format.json`` before anything else, so this is damage, never a
    store still being created."""
    left = [n for n in directory.listdir("") if n == CURRENT_FILE or generation_number(n) is not None]
    if left:
        raise CorruptStore(
            f"{FORMAT_FILE} is missing but the store's other files are here "
            f"({', '.join(left[:3])}); nothing was written",
            file=directory.describe(FORMAT_FILE),
            hint="restore format.json (or the whole directory) from a backup; opening would "
                 "otherwise take an encrypted store for a plain one")


def check_generation_files(directory: Directory, generation: str) -> None:
    """Refuse (``CorruptStore``) a live generation without its journal or text segment: both
    exist (synced) before ``CURRENT`` ever names the generation, so a missing one was deleted."""
    for name in (JOURNAL_FILE, TEXT_FILE):
        path = f"{generation}/{name}"
        if not directory.exists(path):
            raise CorruptStore(
                f"{path} is missing from the live generation; nothing was changed",
                file=directory.describe(path),
                hint="restore the store directory from a backup or a snapshot; opening what is "
                     "left would lose the documents it held")


# -- the CURRENT pointer ------------------------------------------------------------------------

def encode_current(generation: str) -> bytes:
    crc = zlib.crc32(generation.encode()) & 0xFFFFFFFF
    return f"{generation} {crc:08x}\n".encode()


def read_current(directory: Directory) -> str:
    """The live generation's directory name; a damaged ``CURRENT`` is :class:`CorruptStore`."""
    where = directory.describe(CURRENT_FILE)
    raw = directory.read_bytes(CURRENT_FILE)
    try:
        name, crc = raw.decode().split()
        ok = int(crc, 16) == zlib.crc32(name.encode()) & 0xFFFFFFFF
    except (ValueError, UnicodeDecodeError):
        ok = False
    if not ok or generation_number(name) is None:
        raise CorruptStore("CURRENT is damaged", file=where)
    if not directory.exists(name):
        raise CorruptStore(f"CURRENT names {name}, which does not exist", file=where)
    return name


def write_current(directory: Directory, generation: str) -> None:
    """Switch ``CURRENT`` to ``generation`` atomically (the generation must be complete)."""
    directory.atomic_write(CURRENT_FILE, encode_current(generation))


# -- creating and opening -----------------------------------------------------------------------

def create_first_generation(directory: Directory) -> None:
    """A new store's first generation (empty journal and text segment), synced, then
    ``CURRENT`` naming it."""
    generation = generation_name(1)
    directory.makedirs(generation)
    for name in (JOURNAL_FILE, TEXT_FILE):
        directory.open_file(f"{generation}/{name}", create=True).close()
    directory.sync_dir(generation)
    directory.sync_dir("")
    write_current(directory, generation)


def open_generation_files(directory: Directory, generation: str,
                          codec: Codec) -> tuple[FileHandle, TextSegment]:
    """Open (creating them if missing) a generation's journal and text segment; if the second
    open fails, the first is closed, so no descriptor leaks.

    The journal keeps a preallocated tail of zeros while open (storage/journal.py, JournalFile),
    except in memory, where it would only cost memory."""
    journal: FileHandle = JournalFile(
        directory.open_file(f"{generation}/{JOURNAL_FILE}", create=True),
        preallocate=not isinstance(directory, MemoryDirectory))
    text_name = f"{generation}/{TEXT_FILE}"
    try:
        text_handle = directory.open_file(text_name, create=True)
    except BaseException:
        journal.close()
        raise
    return journal, TextSegment(text_handle, codec=codec, where=directory.describe(text_name),
                                file_label=text_name.encode(), version=FORMAT_VERSION)


# -- measuring and removing ---------------------------------------------------------------------

def generation_bytes(directory: Directory, generation: str) -> int:
    """The bytes of every file under ``generation`` (subdirectories included)."""
    total = 0
    for name in directory.listdir(generation):
        path = f"{generation}/{name}"
        if directory.isdir(path):
            total += generation_bytes(directory, path)
        else:
            handle = directory.open_file(path)
            total += handle.size()
            handle.close()
    return total


def remove_generation(directory: Directory, name: str, *, zero: bool) -> None:
    """Remove a generation directory; with ``zero``, overwrite each file with zeros and fsync it
    first, so its bytes are gone from the file system's view of every file."""
    with map_errors("removing an old generation", file=directory.describe(name)):
        for entry in directory.listdir(name):
            path = f"{name}/{entry}"
            if directory.isdir(path):
                remove_generation(directory, path, zero=zero)
                continue
            if zero:
                handle = directory.open_file(path)
                try:
                    size = handle.size()
                    for start in range(0, size, ZERO_CHUNK):
                        handle.write_at(start, bytes(min(ZERO_CHUNK, size - start)))
                    handle.sync()
                finally:
                    handle.close()
            directory.remove(path)
        directory.remove_dir(name)
        parent = name.rsplit("/", 1)[0] if "/" in name else ""
        directory.sync_dir(parent)


def remove_strays(directory: Directory, live: str) -> list[str]:
    """Erase (zeroed first: they may hold text a purge was erasing) every generation but
    ``live``; the names removed."""
    removed = []
    for stray in stray_generations(directory, live):
        with map_errors("removing a stray generation", file=directory.describe(stray)):
            remove_generation(directory, stray, zero=True)
        removed.append(stray)
    return removed
