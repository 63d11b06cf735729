"""The document engine's public face: what every layer above it may use.

``DocumentEngine`` (open, documents, search, transactions, compaction, commit listeners, the
``check`` scrub), ``check_store`` (the scrub of a closed store), ``store_exists``,
``restore_from_bucket`` and ``adopt_replica`` (a store rebuilt from its replica in a bucket), its
values, and the validation of what callers send (the memory layer validates its facts' parts with
the same checks).
Everything else under ``engine/`` (the writer and index-builder actors, the store core,
recovery, compaction, the scrub, the journal payloads) is private to this package: the import
contracts in pyproject.toml keep the layers above from importing it.
"""

from .check import check_store
from .compaction import CompactReport
from .engine import DocumentEngine
from .opening import store_exists
from .readers import MAX_QUERY_BYTES
from .replica_restore import RestoreReport, replicated_stores, restore_from_bucket
from .replica_restore import adopt as adopt_replica
from .scrub import CheckFinding, CheckReport
from .values import (
    DEFAULT_SEMANTIC_WEIGHT,
    TOMBSTONE_PREFIX,
    Change,
    Document,
    EngineStatistics,
    Hit,
    MetadataChunk,
    PutOp,
    PutResult,
    check_id,
    check_metadata,
    check_text,
    check_unicode,
    is_tombstone_json,
    put_op,
)
from .vectors import check_embedding

__all__ = [
    "DEFAULT_SEMANTIC_WEIGHT", "MAX_QUERY_BYTES", "TOMBSTONE_PREFIX", "Change", "CheckFinding", "CheckReport",
    "CompactReport", "Document", "DocumentEngine", "EngineStatistics", "Hit", "MetadataChunk",
    "PutOp", "PutResult", "RestoreReport", "adopt_replica", "check_embedding", "check_id", "check_metadata",
    "check_store", "check_text", "check_unicode", "is_tombstone_json", "put_op",
    "replicated_stores", "restore_from_bucket", "store_exists",
]
