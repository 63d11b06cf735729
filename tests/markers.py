"""Scan every file under a directory for byte strings, also inside every zstd frame found."""

from __future__ import annotations

import os

import zstandard

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _decompressed_frames(data: bytes) -> list[bytes]:
    out = []
    pos = data.find(ZSTD_MAGIC)
    while pos >= 0:
        try:
            out.append(zstandard.ZstdDecompressor().decompressobj().decompress(data[pos:]))
        except zstandard.ZstdError:
            pass
        pos = data.find(ZSTD_MAGIC, pos + 1)
    return out


def files_containing(root: str, needles: list[bytes]) -> dict[bytes, list[str]]:
    """For each needle found anywhere, the files (relative paths) that hold it."""
    found: dict[bytes, list[str]] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            data = open(path, "rb").read()
            views = [data, *_decompressed_frames(data)]
            for needle in needles:
                if any(needle in view for view in views):
                    found.setdefault(needle, []).append(os.path.relpath(path, root))
    return found
