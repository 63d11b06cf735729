"""``format.json`` (what kind of store this is) and the names of a store's files.

A store directory looks like::

    LOCK                  the exclusive lock (flock), empty
    format.json           what kind of store this is (created once; rewritten atomically
                          only when the store's settings change)
    CURRENT               the name of the live generation and its checksum
    gen-00000001/         the live generation
        journal.log       the journal (storage/journal.py)
        documents.text    the text segment (storage/segments.py)

Generation directories and the ``CURRENT`` pointer are storage/generations.py's.

Compatibility rule: ``format.json`` carries ``version`` (the format the writer used) and
``min_reader_version`` (the oldest format a reader must understand to open the store safely).
A build whose ``READER_VERSION`` is below ``min_reader_version`` refuses the store with
:class:`IncompatibleStore` and changes nothing; a newer build opens every older store. A newer
writer that only adds things an older reader can ignore keeps ``min_reader_version`` unchanged.
``FORMAT_VERSION`` is the layout of the frames, records and segments this build writes (still 1);
``READER_VERSION`` the newest store this build opens: 2 adds the memory layer's retention (a
fact's retention end in its stamp, defaults in the ``retention`` settings section), which an
older reader would misread, so a store raises its ``min_reader_version`` to 2 before it first
holds either (``Engine.update_settings(..., min_reader_version=2)``).

The store's settings (``settings``: a JSON object of named sections, such as the memory layer's
embedder identity) are such an addition: an older reader ignores the key and, since it never
rewrites ``format.json``, keeps it; a reader keeps every section it does not know.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from ..errors import CorruptStore, IncompatibleStore, InvalidRequest

FORMAT_NAME = "hmsengine-store"
FORMAT_VERSION = 1
# The newest ``min_reader_version`` this build opens (see the module docstring).
READER_VERSION = 2
FORMAT_FILE = "format.json"
CURRENT_FILE = "CURRENT"
JOURNAL_FILE = "journal.log"
TEXT_FILE = "documents.text"


@attrs.frozen(kw_only=True)
class StoreFormat:
    """The decoded ``format.json``."""

    version: int = FORMAT_VERSION
    min_reader_version: int = 1
    analyzer: str = "standard"
    dim: int = 4096
    embedding_dim: int | None = None
    created_ms: int
    store_id: str
    encryption: dict[str, Any] | None = None
    # Named sections of store-level settings (see check_settings); {} when none was ever set.
    settings: dict[str, Any] = attrs.field(factory=dict)

    def to_json(self) -> bytes:
        body = {
            "format": FORMAT_NAME,
            "version": self.version,
            "min_reader_version": self.min_reader_version,
            "analyzer": self.analyzer,
            "dim": self.dim,
            "embedding_dim": self.embedding_dim,
            "created_ms": self.created_ms,
            "store_id": self.store_id,
            "encryption": self.encryption,
        }
        if self.settings:
            body["settings"] = self.settings
        return (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, data: bytes, *, where: str) -> StoreFormat:
        try:
            body = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptStore(f"format.json is not valid JSON ({exc})", file=where) from exc
        if not isinstance(body, dict) or body.get("format") != FORMAT_NAME:
            raise CorruptStore("format.json does not describe an hmsengine store", file=where)
        min_reader = body.get("min_reader_version", body.get("version"))
        if not isinstance(min_reader, int) or not isinstance(body.get("version"), int):
            raise CorruptStore("format.json has no integer version", file=where)
        if min_reader > READER_VERSION:
            raise IncompatibleStore(
                f"the store at {where} needs format version {min_reader}; this build reads up to "
                f"{READER_VERSION}"
            )
        try:
            return cls(
                version=body["version"],
                min_reader_version=min_reader,
                analyzer=str(body["analyzer"]),
                dim=int(body["dim"]),
                embedding_dim=body.get("embedding_dim"),
                created_ms=int(body["created_ms"]),
                store_id=str(body["store_id"]),
                encryption=body.get("encryption"),
                settings=check_settings(body.get("settings", {}), where=where),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStore(f"format.json is missing or has a bad field ({exc})", file=where) from exc


# The settings are small: a few named sections of plain JSON, not a place for data.
MAX_SETTINGS_BYTES = 64 * 1024
_SECTION_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def updated_settings(settings: dict[str, Any], section: Any, value: Any) -> dict[str, Any]:
    """``settings`` with ``section`` set to a copy of the JSON object ``value`` (or removed, for
    None); ``InvalidRequest`` for a bad section name, a value that is not a plain JSON object,
    or a result over ``MAX_SETTINGS_BYTES``."""
    if not isinstance(section, str) or not _SECTION_RE.match(section):
        raise InvalidRequest(f"section: expected 1-64 lowercase letters, digits and _ (a letter "
                             f"first), got {section!r}")
    if value is not None and not isinstance(value, dict):
        raise InvalidRequest(f"value: expected a JSON object or None, got {type(value).__name__}")
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"value: not plain JSON ({exc})") from None
    out = dict(settings)
    if value is None:
        out.pop(section, None)
    else:
        out[section] = json.loads(encoded)
    if len(json.dumps(out)) > MAX_SETTINGS_BYTES:
        raise InvalidRequest(f"settings: more than {MAX_SETTINGS_BYTES} bytes as JSON")
    return out


def check_settings(value: Any, *, where: str) -> dict[str, Any]:
    """``format.json``'s ``settings``: an object whose keys are section names (lowercase
    letters, digits, ``_``) and whose values are JSON objects; damage is ``CorruptStore``."""
    if not isinstance(value, dict):
        raise CorruptStore("format.json: settings is not an object", file=where)
    for name, section in value.items():
        if not isinstance(name, str) or not _SECTION_RE.match(name) or not isinstance(section, dict):
            raise CorruptStore(f"format.json: bad settings section {name!r}", file=where)
    return value


