"""Opening files that a caller (or a file a caller sent) names: regular files only, confined to a
base directory, read from the one descriptor that was checked.

Used wherever hmsengine reads a file it does not own: file-backed memories (``remember_file``,
``hydrate``), ``inspect_file``, and the files of an import or a snapshot being restored. The rules,
and why (docs/SECURITY.md has the threat model):

* **Open once, check the descriptor, read from it.** A check of a path followed by an open of
  the same path can be raced: another process swaps a file for a symbolic link in between. Every
  decision here is taken on an open descriptor (``fstat``), and the bytes come from it.
* **Regular files only**, refused at once: a FIFO would block the open or the read for ever
  (every open is ``O_NONBLOCK``), a device such as ``/dev/zero`` never ends, a directory is not
  content. ``NotRegular`` names what was found instead.
* **Beneath a base** (:func:`open_beneath`): the path is walked one component at a time from a
  descriptor of the base directory, each component opened with ``O_NOFOLLOW`` relative to the
  previous one (``openat``), so no component is looked up twice. A symbolic link met on the way
  is read (``readlink``) and its target walked by the same rules: one that stays inside the base
  is followed, one that leads out of it (an absolute target elsewhere, or ``..`` above the base)
  is ``OutsideBase``. ``..`` pops the walk's own stack of opened directories, so it can never
  climb above the base however the directories are renamed meanwhile. What ``openat2``'s
  ``RESOLVE_BENEATH`` does in one system call, portably.
* **Never into a store**: directories listed in ``exclude`` (a store's own directory) are
  refused wherever the walk meets them, by device and inode, so a second name for the same
  directory (a symbolic or bind-mounted one) is refused as well.

Everything here is synchronous and raises ``OSError`` (missing file, permission), ``NotRegular``
or ``OutsideBase``; callers translate them into their own errors (``InvalidRequest``,
``ProvenanceError``, ``CorruptStore``) with the names their callers gave.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_FILE_FLAGS = os.O_RDONLY | _CLOEXEC | _NONBLOCK
_DIR_FLAGS = os.O_RDONLY | _CLOEXEC | _DIRECTORY | _NOFOLLOW
# The kernel's own limit on symbolic links in one lookup (Linux: 40).
MAX_LINKS = 40
READ_CHUNK = 1 << 20


class NotRegular(Exception):
    """The path names something other than a regular file; ``kind`` says what."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class OutsideBase(Exception):
    """The path (or a symbolic link on it) leads out of the base, or into an excluded store."""


def kind_of(mode: int) -> str:
    """What a file of this mode is, in words ("a directory", "a FIFO", ...)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def _regular(fd: int) -> os.stat_result:
    """fstat ``fd``; close it and raise ``NotRegular`` unless it is a regular file."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegular(kind_of(st.st_mode))
    return st


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = True,
                 exclude: Sequence[str] = ()) -> tuple[int, os.stat_result]:
    """(descriptor, stat) of the regular file at ``path``; the caller closes the descriptor.

    With ``follow_links=False`` a symbolic link as the last component is refused
    (``NotRegular("a symbolic link")``). A path inside a directory of ``exclude`` is
    ``OutsideBase`` (checked on the resolved path: for callers who may read any file anyway).
    """
    if exclude:
        real = os.path.realpath(path)
        for directory in exclude:
            if _inside(real, os.path.realpath(directory)):
                raise OutsideBase("the path leads into a store directory, outside what may be read")
    try:
        fd = os.open(path, _FILE_FLAGS | (0 if follow_links else _NOFOLLOW))
    except OSError as exc:
        if not follow_links and exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
            raise NotRegular("a symbolic link") from None
        raise
    return fd, _regular(fd)


def open_beneath(base: str | os.PathLike[str], relative: str, *,
                 exclude: Sequence[str] = (), follow_links: bool = True) -> tuple[int, os.stat_result]:
    """(descriptor, stat) of the regular file at ``relative`` inside the directory ``base``,
    resolved without ever leaving it (see the module docstring); the caller closes it.

    ``relative`` may hold ``..`` and lead through symbolic links as long as every step stays
    inside ``base`` (with ``follow_links=False`` any symbolic link on the way is
    ``NotRegular("a symbolic link")``). Raises ``OutsideBase``, ``NotRegular``, or the
    ``OSError`` of the step that failed (``FileNotFoundError`` for a missing component,
    ``NotADirectoryError``, ...).
    """
    root = os.path.realpath(base)
    banned = _identities(exclude)
    if any(_inside(root, os.path.realpath(d)) for d in exclude):
        raise OutsideBase("the file base lies inside a store directory, outside what may be read")
    parts = _parts(relative)
    stack = [os.open(root, os.O_RDONLY | _CLOEXEC | _DIRECTORY)]
    try:
        links = 0
        while parts:
            name = parts.pop(0)
            if name == "..":
                if len(stack) == 1:
                    raise OutsideBase("the path climbs outside the file base")
                os.close(stack.pop())
                continue
            last = not parts
            try:
                flags = (_FILE_FLAGS | _NOFOLLOW) if last else _DIR_FLAGS
                fd = os.open(name, flags, dir_fd=stack[-1])
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
                    raise
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", relative) from None
                target = _link(name, stack[-1])
                if target is None:
                    if exc.errno == errno.ENOTDIR:
                        raise  # a file where a directory was needed
                    parts.insert(0, name)  # a link replaced meanwhile: look at it again
                    continue
                if not follow_links:
                    raise NotRegular("a symbolic link") from None
                if target.startswith("/"):
                    inside = below(root, target)
                    if inside is None:
                        raise OutsideBase("a symbolic link leads outside the file base") from None
                    while len(stack) > 1:
                        os.close(stack.pop())
                    target = inside
                parts = _parts(target) + parts
                continue
            if last:
                return fd, _regular(fd)
            stack.append(fd)
            if banned and _identity(fd) in banned:
                raise OutsideBase("the path leads into a store directory, outside what may be read")
        raise NotRegular("a directory")  # the path named the base itself (or climbed back to it)
    finally:
        for fd in stack:
            os.close(fd)


def read_range(fd: int, offset: int, length: int) -> bytes:
    """Exactly ``length`` bytes at ``offset`` of ``fd``, or fewer if the file ends first."""
    chunks = []
    while length > 0:
        chunk = os.pread(fd, min(length, READ_CHUNK), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        length -= len(chunk)
    return b"".join(chunks)


class TooLarge(Exception):
    """A file holds more bytes than the caller's limit (found before they were read)."""


def read_whole(fd: int, st: os.stat_result, limit: int) -> bytes:
    """All of the regular file open as ``fd`` (``st`` its fstat), refused (``TooLarge``) when
    it holds more than ``limit`` bytes: checked before anything is allocated, and again while
    reading (a file that grows meanwhile is cut off at the limit, never read on)."""
    if st.st_size > limit:
        raise TooLarge(f"{st.st_size} bytes is over the limit of {limit}")
    data = read_range(fd, 0, limit + 1)
    if len(data) > limit:
        raise TooLarge(f"the file grew past the limit of {limit} bytes while it was read")
    return data


def read_beneath(base: str | os.PathLike[str], relative: str, *, limit: int,
                 follow_links: bool = False) -> bytes:
    """All of the regular file at ``relative`` inside ``base`` (``open_beneath``, by default
    following no link at all), at most ``limit`` bytes (``TooLarge`` otherwise)."""
    fd, st = open_beneath(base, relative, follow_links=follow_links)
    try:
        return read_whole(fd, st, limit)
    finally:
        os.close(fd)


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p and p != "."]


def _link(name: str, dir_fd: int) -> str | None:
    """The target of the symbolic link ``name`` in ``dir_fd``, or None if it is not one."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def below(directory: str, path: str) -> str | None:
    """``path`` (absolute) relative to ``directory``, compared component by component (no
    file system access, ``..`` kept for the walk to judge); None if it is not below it."""
    head, rest = _parts(directory), _parts(path)
    if rest[:len(head)] != head:
        return None
    return "/".join(rest[len(head):])


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _identities(directories: Sequence[str]) -> set[tuple[int, int]]:
    out = set()
    for directory in directories:
        try:
            st = os.stat(directory)
        except OSError:
            continue
        out.add((st.st_dev, st.st_ino))
    return out


__all__ = ["MAX_LINKS", "NotRegular", "OutsideBase", "TooLarge", "below", "kind_of", "open_beneath",
           "open_regular", "read_beneath", "read_range", "read_whole"]
