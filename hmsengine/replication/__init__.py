"""Replication to S3-compatible object storage (docs/replication.md): the bucket layout, the
object-store client, the lease, the shipper actor. Synchronous helpers and one actor; the
engine bridges to it (engine/replica.py, engine/replica_restore.py)."""
