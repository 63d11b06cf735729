"""The directory abstraction: every byte the store reads or writes goes through here.

Two implementations share one small interface:

* :class:`FsDirectory` — a real directory, positional reads and writes on raw file descriptors,
  ``fdatasync`` for durability, an exclusive ``flock`` on ``LOCK``.
* :class:`MemoryDirectory` — a purely in-memory directory for ``Engine.open(None)``; the same
  behaviour apart from durability.

Fault-injection and power-loss shims for tests (``storage/simulated.py``) implement the same
interface, so the journal, the text segment and the engine never know which one they run on.

Everything here is synchronous and never imports trio: the engine calls it from worker threads
(large or blocking work) or inline (small reads).

Names are relative paths with ``/`` separators (``gen-00000001/journal.log``).
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from typing import Protocol

from ..errors import InvalidRequest, StoreLocked


class FileHandle(Protocol):
    """A file opened for positional reading and writing.

    ``append`` is only used by the single owner of the file (the writer actor), which is why it can
    track the end of the file itself instead of relying on ``O_APPEND``.
    """

    name: str

    def size(self) -> int: ...
    def read_at(self, offset: int, length: int) -> bytes: ...
    def write_at(self, offset: int, data: bytes) -> None: ...
    def append(self, data: bytes) -> int: ...
    def truncate(self, length: int) -> None: ...
    def sync(self) -> None: ...
    def close(self) -> None: ...


class Directory(Protocol):
    """A store directory: files by relative name, atomic replacement, and the store lock."""

    def open_file(self, name: str, *, create: bool = False) -> FileHandle: ...
    def exists(self, name: str) -> bool: ...
    def read_bytes(self, name: str) -> bytes: ...
    def atomic_write(self, name: str, data: bytes | memoryview) -> None: ...
    def remove(self, name: str) -> None: ...
    def rename(self, src: str, dst: str) -> None: ...
    def listdir(self, name: str = "") -> list[str]: ...
    def makedirs(self, name: str) -> None: ...
    def isdir(self, name: str) -> bool: ...
    def remove_dir(self, name: str) -> None: ...
    def sync_dir(self, name: str = "") -> None: ...
    def lock(self) -> None: ...
    def unlock(self) -> None: ...
    def describe(self, name: str) -> str: ...


def _write_fully(fd: int, data: bytes | memoryview, offset: int) -> None:
    """``pwrite`` until every byte is written; a zero-byte write is ENOSPC, never a silent loss."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        if written <= 0:
            raise OSError(errno.ENOSPC, "short write: no space left on device")
        view = view[written:]
        offset += written


def _fsync(fd: int) -> None:
    # fdatasync also flushes the metadata needed to read the data back (the file size), which is
    # all an append-only file needs; it skips mtime updates, which are not needed for recovery.
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:  # pragma: no cover - macOS/Windows
        os.fsync(fd)


class FsFile:
    """A real file: positional I/O on a raw descriptor (no Python buffering, no hidden copies)."""

    def __init__(self, name: str, path: str, fd: int) -> None:
        self.name = name
        self.path = path
        self._fd = fd
        self._size = os.fstat(fd).st_size

    def size(self) -> int:
        return self._size

    def read_at(self, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        return os.pread(self._fd, length, offset)

    def write_at(self, offset: int, data: bytes) -> None:
        _write_fully(self._fd, data, offset)
        self._size = max(self._size, offset + len(data))

    def append(self, data: bytes) -> int:
        offset = self._size
        try:
            _write_fully(self._fd, data, offset)
        except OSError:
            # A short write may have extended the file: re-read the size so a later append starts
            # after whatever landed (recovery truncates a torn tail anyway).
            self._size = os.fstat(self._fd).st_size
            raise
        self._size = offset + len(data)
        return offset

    def truncate(self, length: int) -> None:
        os.ftruncate(self._fd, length)
        self._size = length

    def sync(self) -> None:
        _fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class FsDirectory:
    """A store directory on the local file system."""

    LOCK_NAME = "LOCK"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self._lock_fd = -1

    def _path(self, name: str) -> str:
        return os.path.join(self.root, *name.split("/")) if name else self.root

    def describe(self, name: str) -> str:
        return self._path(name)

    def open_file(self, name: str, *, create: bool = False) -> FsFile:
        flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
        if create:
            flags |= os.O_CREAT
        fd = os.open(self._path(name), flags, 0o600)
        return FsFile(name, self._path(name), fd)

    def exists(self, name: str) -> bool:
        return os.path.exists(self._path(name))

    def read_bytes(self, name: str) -> bytes:
        with open(self._path(name), "rb") as f:
            return f.read()

    def atomic_write(self, name: str, data: bytes | memoryview) -> None:
        """Replace ``name`` with ``data`` atomically: temp file, fsync, rename, directory fsync.

        After a crash the file holds either the old or the new content, never a mix.
        """
        path = self._path(name)
        tmp = path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            _write_fully(fd, data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        self.sync_dir(os.path.dirname(name.replace("/", os.sep)).replace(os.sep, "/"))

    def remove(self, name: str) -> None:
        os.unlink(self._path(name))

    def rename(self, src: str, dst: str) -> None:
        os.replace(self._path(src), self._path(dst))

    def listdir(self, name: str = "") -> list[str]:
        return sorted(os.listdir(self._path(name)))

    def makedirs(self, name: str) -> None:
        os.makedirs(self._path(name), exist_ok=True)

    def isdir(self, name: str) -> bool:
        return os.path.isdir(self._path(name))

    def remove_dir(self, name: str) -> None:
        os.rmdir(self._path(name))

    def sync_dir(self, name: str = "") -> None:
        fd = os.open(self._path(name), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def lock(self) -> None:
        """Take the exclusive store lock, or raise :class:`StoreLocked`.

        ``flock`` locks belong to the open file description, so a second open in the same process
        conflicts too (POSIX ``fcntl`` record locks would not).
        """
        if not os.path.isdir(self.root):
            # A path that cannot hold a store is bad input, said in one line (never an OSError
            # traceback): a file, or a directory that cannot be created (/proc, no permission).
            if os.path.lexists(self.root):
                raise InvalidRequest(f"{self.root} is not a directory, so it cannot hold a store",
                                     hint="give a new directory or one a store was created in")
            try:
                os.makedirs(self.root, exist_ok=True)
            except OSError as exc:
                raise InvalidRequest(f"cannot create the store directory {self.root} "
                                     f"({exc.strerror or exc})",
                                     hint="give a directory that can be created, or an existing "
                                          "store") from None
            # Make the new root's own directory entry durable too.
            parent = os.open(os.path.dirname(self.root), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            try:
                os.fsync(parent)
            finally:
                os.close(parent)
        try:
            fd = os.open(self._path(self.LOCK_NAME),
                         os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise InvalidRequest(f"cannot open the store {self.root} for writing "
                                 f"({exc.strerror or exc})",
                                 hint="give a directory this user may write in") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreLocked(f"the store {self.root} is already open") from None
            raise
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1


class MemoryFile:
    """An in-memory file; thread-safe for one writer and concurrent readers."""

    def __init__(self, name: str, data: bytearray) -> None:
        self.name = name
        self._data = data
        self._mutex = threading.Lock()

    def size(self) -> int:
        return len(self._data)

    def read_at(self, offset: int, length: int) -> bytes:
        with self._mutex:
            return bytes(self._data[offset : offset + max(length, 0)])

    def write_at(self, offset: int, data: bytes) -> None:
        with self._mutex:
            if offset > len(self._data):
                self._data.extend(b"\0" * (offset - len(self._data)))
            self._data[offset : offset + len(data)] = data

    def append(self, data: bytes) -> int:
        with self._mutex:
            offset = len(self._data)
            self._data.extend(data)
            return offset

    def truncate(self, length: int) -> None:
        with self._mutex:
            if length < len(self._data):
                del self._data[length:]
            else:
                self._data.extend(b"\0" * (length - len(self._data)))

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass


class MemoryDirectory:
    """A directory held in memory: the store of ``Engine.open(None)``; nothing survives the process."""

    def __init__(self) -> None:
        self.files: dict[str, bytearray] = {}
        self.dirs: set[str] = {""}
        self._locked = False

    def describe(self, name: str) -> str:
        return f"<memory>/{name}"

    def open_file(self, name: str, *, create: bool = False) -> MemoryFile:
        if name not in self.files:
            if not create:
                raise FileNotFoundError(errno.ENOENT, "no such file", name)
            self.files[name] = bytearray()
        return MemoryFile(name, self.files[name])

    def exists(self, name: str) -> bool:
        return name in self.files or name in self.dirs

    def read_bytes(self, name: str) -> bytes:
        if name not in self.files:
            raise FileNotFoundError(errno.ENOENT, "no such file", name)
        return bytes(self.files[name])

    def atomic_write(self, name: str, data: bytes | memoryview) -> None:
        self.files[name] = bytearray(data)

    def remove(self, name: str) -> None:
        if self.files.pop(name, None) is None:
            raise FileNotFoundError(errno.ENOENT, "no such file", name)

    def rename(self, src: str, dst: str) -> None:
        self.files[dst] = self.files.pop(src)

    def listdir(self, name: str = "") -> list[str]:
        prefix = f"{name}/" if name else ""
        out = set()
        for path in list(self.files) + list(self.dirs):
            if path and path.startswith(prefix):
                out.add(path[len(prefix) :].split("/", 1)[0])
        return sorted(out)

    def makedirs(self, name: str) -> None:
        parts = name.split("/")
        for i in range(1, len(parts) + 1):
            self.dirs.add("/".join(parts[:i]))

    def isdir(self, name: str) -> bool:
        return name in self.dirs

    def remove_dir(self, name: str) -> None:
        self.dirs.discard(name)

    def sync_dir(self, name: str = "") -> None:
        pass

    def lock(self) -> None:
        if self._locked:
            raise StoreLocked("the in-memory store is already open")
        self._locked = True

    def unlock(self) -> None:
        self._locked = False
