"""Keys of encrypted stores: key derivation, the key-check record, and the AEAD codec.

A store created with ``key=`` records in ``format.json`` (``encryption``)::

    {"cipher": "aes-256-gcm",
     "kdf": {"name": "argon2id", "salt": B64, "iterations": 3, "lanes": 4, "memory_kib": 65536}
            | {"name": "scrypt", "salt": B64, "n": 131072, "r": 8, "p": 1}
            | {"name": "raw"},                                 # the caller gave 32 raw bytes
     "key_check": B64}                                         # nonce || AES-GCM(KEY_CHECK_TEXT)

The key check is opened before any other file is read: a wrong or missing key raises
:class:`WrongKey` and nothing else is touched. Its associated data binds it to the store's id.

Every sealed record is ``nonce (12 random bytes) || ciphertext || tag (16 bytes)`` of the
zstd-compressed payload; the associated data (built by the journal, the text segment and the
index files) binds the ciphertext to its file, its position and the format version, so a record
copied elsewhere fails authentication.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from ..errors import CorruptStore, InvalidRequest, WrongKey
from .codec import FLAG_AEAD, FLAG_ZSTD, MAX_DECOMPRESSED, Codec, zstd_frame

KEY_CHECK_TEXT = b"hmsengine key check v1"
NONCE_SIZE = 12
TAG_SIZE = 16
ARGON2 = {"iterations": 3, "lanes": 4, "memory_kib": 64 * 1024}
SCRYPT = {"n": 1 << 17, "r": 8, "p": 1}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def check_key_argument(key: object) -> str | bytes | None:
    """``None``, a non-empty passphrase ``str``, or exactly 32 raw ``bytes``."""
    if key is None:
        return None
    if isinstance(key, str):
        if not key:
            raise InvalidRequest("key: an empty passphrase is not a key")
        return key
    if isinstance(key, (bytes, bytearray)):
        if len(key) != 32:
            raise InvalidRequest(f"key: raw keys are 32 bytes, got {len(key)}")
        return bytes(key)
    raise InvalidRequest(f"key: expected None, a passphrase str or 32 bytes, got {type(key).__name__}")


def derive(key: str | bytes, kdf: dict[str, Any]) -> bytes:
    """The 32-byte store key from the caller's key and the recorded KDF parameters."""
    name = kdf.get("name")
    if name == "raw":
        if not isinstance(key, bytes):
            raise WrongKey("this store was created with a 32-byte raw key, not a passphrase")
        return key
    if not isinstance(key, str):
        raise WrongKey("this store was created with a passphrase, not a raw key")
    secret = key.encode("utf-8")
    salt = _unb64(kdf["salt"])
    if name == "argon2id":
        from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

        return Argon2id(salt=salt, length=32, iterations=int(kdf["iterations"]),
                        lanes=int(kdf["lanes"]), memory_cost=int(kdf["memory_kib"])).derive(secret)
    if name == "scrypt":
        return Scrypt(salt=salt, length=32, n=int(kdf["n"]), r=int(kdf["r"]),
                      p=int(kdf["p"])).derive(secret)
    raise CorruptStore(f"format.json names an unknown key derivation {name!r}")


def _new_kdf(key: str | bytes) -> dict[str, Any]:
    if isinstance(key, bytes):
        return {"name": "raw"}
    salt = _b64(os.urandom(16))
    try:
        from cryptography.hazmat.primitives.kdf.argon2 import Argon2id  # noqa: F401

        return {"name": "argon2id", "salt": salt, **ARGON2}
    except ImportError:  # an older cryptography without Argon2id
        return {"name": "scrypt", "salt": salt, **SCRYPT}


def new_encryption(key: str | bytes, store_id: str) -> tuple[dict[str, Any], bytes]:
    """The ``encryption`` field of a new store's format.json, and the derived key."""
    kdf = _new_kdf(key)
    derived = derive(key, kdf)
    nonce = os.urandom(NONCE_SIZE)
    check = nonce + AESGCM(derived).encrypt(nonce, KEY_CHECK_TEXT, b"key-check|" + store_id.encode())
    return {"cipher": "aes-256-gcm", "kdf": kdf, "key_check": _b64(check)}, derived


def open_encryption(key: str | bytes | None, encryption: dict[str, Any], store_id: str) -> bytes:
    """Verify ``key`` against the key-check record; return the derived key or raise WrongKey."""
    if key is None:
        raise WrongKey("the store is encrypted: open it with its key")
    if encryption.get("cipher") != "aes-256-gcm":
        raise CorruptStore(f"format.json names an unknown cipher {encryption.get('cipher')!r}")
    derived = derive(key, encryption["kdf"])
    check = _unb64(encryption["key_check"])
    try:
        plain = AESGCM(derived).decrypt(check[:NONCE_SIZE], check[NONCE_SIZE:],
                                        b"key-check|" + store_id.encode())
    except InvalidTag:
        raise WrongKey("the key does not open this store") from None
    if plain != KEY_CHECK_TEXT:
        raise WrongKey("the key does not open this store")
    return derived


class SealedCodec(Codec):
    """A zstd frame (codec.zstd_frame: raw block for small payloads), then AES-256-GCM with a
    fresh random 96-bit nonce per record."""

    encrypted = True

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def encode(self, data: bytes, *, aad: bytes, compress_small: bool = False,
               fast: bool = False) -> tuple[int, bytes]:
        nonce = os.urandom(NONCE_SIZE)
        frame = zstd_frame(data, compress_small=compress_small, fast=fast)
        return FLAG_ZSTD | FLAG_AEAD, nonce + self._aead.encrypt(nonce, frame, aad)

    def decode(self, flags: int, stored: bytes, *, aad: bytes, where: str, offset: int,
               max_size: int = MAX_DECOMPRESSED) -> bytes:
        compressed = self._open_sealed(flags, stored, aad=aad, where=where, offset=offset)
        return Codec.decode(self, FLAG_ZSTD, compressed, aad=aad, where=where, offset=offset,
                            max_size=max_size)

    def _open_sealed(self, flags: int, stored: bytes, *, aad: bytes, where: str,
                     offset: int) -> bytes:
        """The compressed record inside a sealed one, authenticated."""
        if flags != FLAG_ZSTD | FLAG_AEAD:
            raise CorruptStore(f"unsealed record (flags {flags:#04x}) in an encrypted store",
                               file=where, offset=offset)
        if len(stored) < NONCE_SIZE + TAG_SIZE:
            raise CorruptStore("sealed record too short", file=where, offset=offset)
        try:
            compressed = self._aead.decrypt(stored[:NONCE_SIZE], stored[NONCE_SIZE:], aad)
        except InvalidTag:
            raise CorruptStore("sealed record fails authentication", file=where, offset=offset) from None
        return compressed

    def decode_writable(self, flags: int, stored: bytes, *, aad: bytes, where: str,
                        offset: int, max_size: int = MAX_DECOMPRESSED) -> memoryview:
        compressed = self._open_sealed(flags, stored, aad=aad, where=where, offset=offset)
        return Codec.decode_writable(self, FLAG_ZSTD, compressed, aad=aad, where=where,
                                     offset=offset, max_size=max_size)


__all__ = ["SealedCodec", "check_key_argument", "new_encryption", "open_encryption"]
