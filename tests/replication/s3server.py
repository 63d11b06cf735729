"""A real S3 server for the replication tests: moto's server mode on 127.0.0.1, in this process.

It speaks the S3 HTTP API (conditional writes included) on a local port; the tests start it,
stop it (an outage) and start it again on the same port (moto keeps the buckets in memory
across a restart). Nothing reaches the network. ``decoded_scan`` opens every object the way a
restore does (segment envelope, zstd, every frame's payload through the store's codec, with
the key for an encrypted store; index files through index/persist.py) and searches the
plaintext and every raw view for needles, as tests/decoded.py does for a store's files.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import uuid
from collections import defaultdict
from typing import Any

import boto3
from decoded import Views, containing
from moto.server import ThreadedMotoServer

from hmsengine.engine.scrub import zstd_frames
from hmsengine.index import persist
from hmsengine.replication.layout import FormatRef, OtherRef, SegmentRef, decode_segment, parse_key
from hmsengine.storage.codec import PLAIN, Codec
from hmsengine.storage.journal import HEADER, frame_aad, iter_frame_offsets
from hmsengine.storage.keys import SealedCodec, open_encryption
from hmsengine.storage.manifest import FORMAT_VERSION, StoreFormat


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class S3Server:
    """moto's S3 server on 127.0.0.1:port, with the AWS_* variables that point at it."""

    def __init__(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.env = {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing",
                    "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
        self._server: ThreadedMotoServer | None = None
        self.start()
        self.s3 = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                               aws_access_key_id="testing", aws_secret_access_key="testing")

    def start(self) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def bucket(self) -> str:
        """A new, empty bucket."""
        name = f"b-{uuid.uuid4().hex[:16]}"
        self.s3.create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object under ``prefix``, key -> bytes (one that is deleted while it is listed
        is left out, as a later listing would)."""
        out = {}
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for page in pages:
            for item in page.get("Contents", ()):
                try:
                    body = self.s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
                except self.s3.exceptions.NoSuchKey:
                    continue  # deleted between the listing and the read (a shipper at work)
                out[item["Key"]] = body
        return out


def _codec(objects: dict[str, bytes], prefix: str, key: Any) -> Codec:
    fmt = StoreFormat.from_json(objects[f"{prefix}/format.json"], where="format.json")
    if fmt.encryption is None:
        return PLAIN
    return SealedCodec(open_encryption(key, fmt.encryption, fmt.store_id))


def bucket_views(objects: dict[str, bytes], prefix: str, key: Any = None) -> Views:
    """Every view of every object under ``prefix`` (one store), as tests/decoded.py has them
    for a store's files: the raw bytes and every zstd frame in them, and each object decoded the
    way a restore reads it, through the product's own code: a segment's envelope verified and
    its body decompressed, each journal frame's payload decoded (decrypted with ``key`` for an
    encrypted store), each index file's payload verified and decoded. Any object of a
    generation that does not decode is an assertion error: nothing sealed escapes the scan."""
    codec = _codec(objects, prefix, key)
    views: Views = defaultdict(list)
    for name, data in objects.items():
        views[name].append(data)
        views[name].extend(inner for _, inner in zstd_frames(data))
        ref = parse_key(name[len(prefix) + 1:], len(data)) if name.startswith(prefix + "/") else None
        if isinstance(ref, SegmentRef):
            body = decode_segment(data, where=name).body
            views[name].append(body)
            label = f"{ref.generation}/journal.log".encode()
            for pos, end in iter_frame_offsets(body, FORMAT_VERSION):
                _m, version, _kind, flags, *_ = HEADER.unpack_from(body, pos)
                views[name].append(codec.decode(flags, body[pos + HEADER.size:end],
                                                aad=frame_aad(label, ref.start + pos, version),
                                                where=name, offset=pos))
        elif isinstance(ref, OtherRef) and "/index/" in name:
            file = name.rsplit("/", 1)[1][:-len("-") - 64 - len(".hsi")] + ".hsi"
            views[name].append(bytes(persist.decode_payload(data, codec, file, name)))
        elif isinstance(ref, (FormatRef, OtherRef)) or name.endswith((".json",)):
            json.loads(data)  # format objects, index.json, markers, the lease: plain JSON
        else:
            raise AssertionError(f"an object the scan cannot decode: {name}")
    return views


def decoded_scan(objects: dict[str, bytes], prefix: str, needles: list[bytes],
                 key: Any = None, *, fold: bool = False) -> dict[bytes, list[str]]:
    """For each needle found in any view of any object (``bucket_views``), the keys holding it;
    with ``fold``, ASCII case is ignored (analyzed terms are lower case)."""
    return containing(bucket_views(objects, prefix, key), needles, fold=fold)


def environ_with(env: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **env}
