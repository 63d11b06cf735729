"""Directories that misbehave on purpose, for crash and fault tests.

* :class:`PowerLossDirectory` remembers, per file, what was made durable by the last ``sync`` and
  every write since. :meth:`PowerLossDirectory.crash_states` enumerates what a power loss could
  leave: unsynced writes dropped (any prefix of them kept) and the last kept write torn at a
  512-byte sector boundary. Each state is a :class:`MemoryDirectory` a store can be reopened from.
* :class:`FaultyDirectory` wraps any directory and makes the Nth call of chosen operations fail
  with an ``OSError`` (EIO, ENOSPC, ...) or a short write.

They implement the same interface as storage/directory.py and live in the package (not in tests)
so that later reliability tests and tools can use them too.
"""

from __future__ import annotations

import errno as _errno
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .directory import Directory, FileHandle, MemoryDirectory, MemoryFile

SECTOR = 512


class _SimFile:
    """Durable bytes, current bytes, and the writes since the last sync."""

    def __init__(self) -> None:
        self.durable = bytearray()
        self.current = bytearray()
        self.pending: list[tuple[str, int, bytes]] = []  # ("w", offset, data) | ("t", length, b"")


class _PowerLossFile:
    def __init__(self, owner: PowerLossDirectory, name: str) -> None:
        self.name = name
        self._owner = owner
        self._file = owner.sim[name]

    def size(self) -> int:
        return len(self._file.current)

    def read_at(self, offset: int, length: int) -> bytes:
        with self._owner.mutex:
            return bytes(self._file.current[offset : offset + max(length, 0)])

    def write_at(self, offset: int, data: bytes) -> None:
        self._owner.before("write", self.name)
        with self._owner.mutex:
            cur = self._file.current
            if offset > len(cur):
                cur.extend(b"\0" * (offset - len(cur)))
            cur[offset : offset + len(data)] = data
            self._file.pending.append(("w", offset, bytes(data)))

    def append(self, data: bytes) -> int:
        offset = len(self._file.current)
        self.write_at(offset, data)
        return offset

    def truncate(self, length: int) -> None:
        self._owner.before("truncate", self.name)
        with self._owner.mutex:
            cur = self._file.current
            if length < len(cur):
                del cur[length:]
            else:
                cur.extend(b"\0" * (length - len(cur)))
            self._file.pending.append(("t", length, b""))

    def sync(self) -> None:
        self._owner.before("sync", self.name)
        with self._owner.mutex:
            self._file.durable = bytearray(self._file.current)
            self._file.pending.clear()
        self._owner.after("sync", self.name)

    def close(self) -> None:
        pass


def _apply(base: bytearray, ops: list[tuple[str, int, bytes]]) -> bytearray:
    out = bytearray(base)
    for kind, pos, data in ops:
        if kind == "w":
            if pos > len(out):
                out.extend(b"\0" * (pos - len(out)))
            out[pos : pos + len(data)] = data
        elif pos < len(out):
            del out[pos:]
        else:
            out.extend(b"\0" * (pos - len(out)))
    return out


class PowerLossDirectory:
    """An in-memory directory that can enumerate the states a power loss would leave.

    Directory operations (create, rename, ``atomic_write``) are treated as durable at once: the
    store fsyncs its directories at each of them. ``hook`` (if set) is called before each write,
    truncate and sync with ``(operation, file name)``, from whatever thread performs it.
    """

    def __init__(self) -> None:
        self.sim: dict[str, _SimFile] = {}
        self.dirs: set[str] = {""}
        self.mutex = threading.RLock()
        self.hook: Callable[[str, str], None] | None = None
        self.after_hook: Callable[[str, str], None] | None = None
        self._locked = False

    def before(self, op: str, name: str) -> None:
        if self.hook is not None:
            self.hook(op, name)

    def after(self, op: str, name: str) -> None:
        if self.after_hook is not None:
            self.after_hook(op, name)

    # -- Directory interface ----------------------------------------------------------------

    def describe(self, name: str) -> str:
        return f"<power-loss>/{name}"

    def open_file(self, name: str, *, create: bool = False) -> FileHandle:
        with self.mutex:
            if name not in self.sim:
                if not create:
                    raise FileNotFoundError(_errno.ENOENT, "no such file", name)
                self.sim[name] = _SimFile()
        return _PowerLossFile(self, name)

    def exists(self, name: str) -> bool:
        return name in self.sim or name in self.dirs

    def read_bytes(self, name: str) -> bytes:
        if name not in self.sim:
            raise FileNotFoundError(_errno.ENOENT, "no such file", name)
        return bytes(self.sim[name].current)

    def atomic_write(self, name: str, data: bytes | memoryview) -> None:
        with self.mutex:
            f = self.sim[name] = _SimFile()
            f.durable = bytearray(data)
            f.current = bytearray(data)

    def remove(self, name: str) -> None:
        with self.mutex:
            del self.sim[name]

    def rename(self, src: str, dst: str) -> None:
        with self.mutex:
            self.sim[dst] = self.sim.pop(src)

    def listdir(self, name: str = "") -> list[str]:
        prefix = f"{name}/" if name else ""
        return sorted({p[len(prefix):].split("/", 1)[0]
                       for p in list(self.sim) + list(self.dirs) if p and p.startswith(prefix)})

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
        self._locked = True

    def unlock(self) -> None:
        self._locked = False

    # -- crash states -----------------------------------------------------------------------

    def freeze(self) -> dict[str, tuple[bytes, list[tuple[str, int, bytes]]]]:
        """The durable bytes and pending writes of every file, at this instant."""
        with self.mutex:
            return {n: (bytes(f.durable), list(f.pending)) for n, f in self.sim.items()}

    @staticmethod
    def file_variants(durable: bytes, pending: list[tuple[str, int, bytes]],
                      rng: random.Random, limit: int) -> list[bytearray]:
        """Contents a power loss could leave in one file: prefixes of the pending writes, each
        optionally followed by a torn copy of the next write cut at a sector boundary."""
        base = bytearray(durable)
        variants: list[bytearray] = []
        for kept in range(len(pending) + 1):
            variants.append(_apply(base, pending[:kept]))
            if kept < len(pending) and pending[kept][0] == "w":
                _, pos, data = pending[kept]
                cuts = [c - pos for c in range((pos // SECTOR + 1) * SECTOR, pos + len(data), SECTOR)]
                for cut in cuts[:3] + ([cuts[-1]] if len(cuts) > 3 else []):
                    variants.append(_apply(base, [*pending[:kept], ("w", pos, data[:cut])]))
        if len(variants) > limit:
            # Always keep "nothing survived" and "everything survived"; sample the rest.
            middle = rng.sample(variants[1:-1], limit - 2)
            variants = [variants[0], *middle, variants[-1]]
        return variants

    @classmethod
    def crash_states(cls, frozen: dict[str, tuple[bytes, list[tuple[str, int, bytes]]]],
                     dirs: set[str], *, seed: int = 0, per_file: int = 12) -> Iterator[MemoryDirectory]:
        """Every combination would explode; vary one file fully while the others take a sampled
        variant, which still covers each file's prefixes and tears."""
        rng = random.Random(seed)
        options = {n: cls.file_variants(d, p, rng, per_file) for n, (d, p) in frozen.items()}
        names = [n for n, v in options.items() if len(v) > 1] or list(options)[:1]
        for focus in names:
            for variant in options[focus]:
                directory = MemoryDirectory()
                directory.dirs = set(dirs)
                for n, vs in options.items():
                    directory.files[n] = bytearray(variant if n == focus else rng.choice(vs))
                yield directory


class _FaultyFile:
    def __init__(self, owner: FaultyDirectory, inner: FileHandle) -> None:
        self.name = inner.name
        self._owner = owner
        self._inner = inner

    def size(self) -> int:
        return self._inner.size()

    def read_at(self, offset: int, length: int) -> bytes:
        return self._inner.read_at(offset, length)

    def write_at(self, offset: int, data: bytes) -> None:
        data = self._owner.check("write", self.name, data)
        self._inner.write_at(offset, data)
        self._owner.finish_short_write()

    def append(self, data: bytes) -> int:
        data = self._owner.check("write", self.name, data)
        offset = self._inner.append(data)
        self._owner.finish_short_write()
        return offset

    def truncate(self, length: int) -> None:
        self._owner.check("truncate", self.name, b"")
        self._inner.truncate(length)

    def sync(self) -> None:
        self._owner.check("sync", self.name, b"")
        self._inner.sync()

    def close(self) -> None:
        self._owner.open_handles -= 1
        self._inner.close()


class FaultyDirectory:
    """Wraps a directory; the ``nth`` call (1-based, counted over ``ops``) fails.

    ``error`` is an errno (the call raises ``OSError(error)``) or ``"short"`` (a write lands
    only its first half, then raises ENOSPC, as a full disk does).
    """

    def __init__(self, inner: Directory) -> None:
        self.inner = inner
        self.calls = 0
        self.nth: int | None = None
        self.ops: frozenset[str] = frozenset()
        self.error: int | str = _errno.EIO
        self.failed: list[tuple[str, str]] = []
        self.open_handles = 0
        self._short_pending = False

    def arm(self, nth: int, *, ops: tuple[str, ...] = ("write", "sync", "truncate"),
            error: int | str = _errno.EIO) -> None:
        self.calls, self.nth, self.ops, self.error = 0, nth, frozenset(ops), error

    def disarm(self) -> None:
        self.nth = None

    def check(self, op: str, name: str, data: bytes) -> bytes:
        if self.nth is None or op not in self.ops:
            return data
        self.calls += 1
        if self.calls != self.nth:
            return data
        self.failed.append((op, name))
        if self.error == "short" and op == "write" and len(data) > 1:
            self._short_pending = True
            return data[: len(data) // 2]
        code = _errno.ENOSPC if self.error == "short" else int(self.error)
        raise OSError(code, f"injected {_errno.errorcode.get(code, code)} on {op} of {name}")

    def finish_short_write(self) -> None:
        if self._short_pending:
            self._short_pending = False
            raise OSError(_errno.ENOSPC, "injected short write")

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def open_file(self, name: str, *, create: bool = False) -> FileHandle:
        self.check("open", name, b"")
        handle = _FaultyFile(self, self.inner.open_file(name, create=create))
        self.open_handles += 1
        return handle

    # Directory operations fail only when named in ``ops`` ("rename", "remove", "atomic_write",
    # "sync_dir", "open"); the default ``ops`` of :meth:`arm` leave them alone.

    def atomic_write(self, name: str, data: bytes | memoryview) -> None:
        self.check("atomic_write", name, b"")
        self.inner.atomic_write(name, data)

    def rename(self, src: str, dst: str) -> None:
        self.check("rename", src, b"")
        self.inner.rename(src, dst)

    def remove(self, name: str) -> None:
        self.check("remove", name, b"")
        self.inner.remove(name)

    def sync_dir(self, name: str = "") -> None:
        self.check("sync_dir", name, b"")
        self.inner.sync_dir(name)


__all__ = ["FaultyDirectory", "MemoryFile", "PowerLossDirectory"]
