"""The store's settings (format.json's ``settings``): a failed write changes nothing, neither in
memory nor on disk, and a store reopened after it holds the last settings that were written."""

from __future__ import annotations

import errno
import json
import os

import pytest

from hmsengine import Engine, HmsError
from hmsengine.storage.directory import FsDirectory
from hmsengine.storage.simulated import FaultyDirectory


async def test_a_failed_settings_write_changes_nothing(disk_path: str) -> None:
    """An I/O error in the atomic rewrite of format.json is a clear HmsError; the settings
    read before it stay, in the open engine and after a reopen; the next write succeeds."""
    faulty = FaultyDirectory(FsDirectory(disk_path))
    async with Engine.open(faulty) as engine:
        await engine.update_settings("embedder", {"model": "a", "dim": 4, "version": "1"})
        faulty.arm(1, ops=("atomic_write",), error=errno.EIO)
        with pytest.raises(HmsError):
            await engine.update_settings("embedder", {"model": "b", "dim": 4, "version": "1"})
        assert faulty.failed and engine.settings["embedder"]["model"] == "a"
        faulty.disarm()
        await engine.update_settings("memory", {"supersession": "latest-by-subject"})
        await engine.put_document("d", "a document written after the failure")
    with open(os.path.join(disk_path, "format.json")) as f:
        on_disk = json.load(f)
    assert on_disk["settings"] == {"embedder": {"model": "a", "dim": 4, "version": "1"},
                                   "memory": {"supersession": "latest-by-subject"}}
    async with Engine.open(disk_path) as engine:
        assert engine.settings == on_disk["settings"]
        assert await engine.get_document("d") is not None


async def test_a_store_without_settings_has_none_on_disk(disk_path: str) -> None:
    """A store whose settings were never set writes no ``settings`` key (older builds read
    exactly the format.json they always did) and reports {}."""
    async with Engine.open(disk_path) as engine:
        assert engine.settings == {}
    with open(os.path.join(disk_path, "format.json")) as f:
        assert "settings" not in json.load(f)
