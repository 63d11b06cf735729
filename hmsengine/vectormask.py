"""The client-side vector mask: a secret rotation of embeddings, so a server sees only masked ones.

``VectorMask(key)`` turns each embedding a client sends (remember, recall, explain, document
puts and searches) into its image under an orthogonal map derived from ``key``, and turns the
embeddings that come back (``Fact.embedding``, ``Document.embedding``) back again. An orthogonal
map keeps every inner product and norm, so cosine scores, rankings and fused scores computed by
the server on masked vectors are those of the raw vectors (up to float32 rounding, ~1e-7), while
no raw coordinate reaches the server.

What it protects, and what it does not (docs/SECURITY.md, "Client-side vector mask"):

- It hides the coordinates: a server, a store directory or an export holds vectors that a model
  or a vector-inversion method cannot read directly, and stores masked with different keys
  cannot be compared with each other.
- It does not hide geometry: every similarity between stored vectors and between a query and
  them is unchanged, by design; so are norms, clusters and nearest neighbours.
- It is not encryption. Anyone holding pairs of raw and masked vectors (about ``dim`` of them:
  e.g. a server that runs the same public embedding model on the texts it also receives) can
  solve for the rotation and unmask every vector. Texts, ids and metadata are sent in clear.
  Use it where the embedding model, or the vectors' coordinates, must stay with the client;
  use TLS, API keys and an encrypted store for the rest.

The map (version 1), specified exactly so the TypeScript client computes the same bits:

1. seed: ``key`` as given when it is bytes (at least 16), else scrypt of the UTF-8 passphrase
   (salt ``b"hmsengine vector mask v1"``, N 2**14, r 8, p 1, 32 bytes);
2. a byte stream: SHAKE-256 of ``b"hmsengine vector mask v1" || 0x00 || dim (uint32, big
   endian) || seed``, read as big-endian uint32 words ``u``;
3. ``R = 2 * ceil(log2(dim)) + 2`` rounds; each round draws a permutation (Fisher-Yates, for
   i = dim-1 down to 1 swap i with ``uniform(i + 1)``, where ``uniform(n)`` rejects ``u >=
   2**32 - 2**32 % n`` and returns ``u % n``) and then ``dim // 2`` rotations (pairs x = u/2**31
   - 1, y likewise, rejected unless 0 < x*x + y*y <= 1; cos = x / sqrt(r2), sin = y / sqrt(r2));
4. a round maps v to w: ``w[i] = v[perm[i]]``, then for each pair k, with a = w[2k],
   b = w[2k+1]: ``w[2k] = cos*a - sin*b``, ``w[2k+1] = sin*a + cos*b`` (an odd last coordinate is
   left as it is); every operation in float64, in that order (no fused multiply-add).

After ``R`` rounds each output coordinate depends on every input one. Dimensions below 2 are
refused (no rotation exists there).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import InvalidRequest

DOMAIN = b"hmsengine vector mask v1"
SCRYPT = {"n": 1 << 14, "r": 8, "p": 1}
MIN_KEY_BYTES = 16
MAX_DIM = 65536


def derive_seed(key: str | bytes) -> bytes:
    """The 32-byte (or raw) seed of a key: bytes as given, a passphrase through scrypt."""
    if isinstance(key, (bytes, bytearray)):
        if len(key) < MIN_KEY_BYTES:
            raise InvalidRequest(f"vector mask key: raw keys are at least {MIN_KEY_BYTES} bytes, "
                                 f"got {len(key)}", hint="use 32 random bytes (os.urandom(32))")
        return bytes(key)
    if isinstance(key, str):
        if not key:
            raise InvalidRequest("vector mask key: an empty passphrase is not a key")
        return hashlib.scrypt(key.encode("utf-8"), salt=DOMAIN, dklen=32, **SCRYPT)
    raise InvalidRequest(f"vector mask key: expected a passphrase str or bytes, "
                         f"got {type(key).__name__}")


class _Words:
    """The big-endian uint32 words of SHAKE-256(message), drawn one by one."""

    def __init__(self, message: bytes, first: int) -> None:
        self._message = message
        self._words: list[int] = []
        self._next = 0
        self._grow(first)

    def _grow(self, count: int) -> None:
        # SHAKE's output for n bytes is a prefix of its output for more: asking again for twice
        # as much continues the same stream.
        data = hashlib.shake_256(self._message).digest(4 * count)
        self._words = np.frombuffer(data, dtype=">u4").tolist()

    def next(self) -> int:
        if self._next == len(self._words):
            self._grow(2 * len(self._words))
        word = self._words[self._next]
        self._next += 1
        return word

    def uniform(self, n: int) -> int:
        limit = (1 << 32) - (1 << 32) % n
        while True:
            word = self.next()
            if word < limit:
                return word % n


def rounds_for(dim: int) -> int:
    return 2 * math.ceil(math.log2(dim)) + 2


class _Rotation:
    """The rounds of one (seed, dim): permutations and the pairs' cosines and sines."""

    def __init__(self, seed: bytes, dim: int) -> None:
        rounds = rounds_for(dim)
        pairs = dim // 2
        words = _Words(DOMAIN + b"\0" + dim.to_bytes(4, "big") + seed,
                       first=rounds * (dim + 3 * pairs))
        self.dim = dim
        self.perms: list[np.ndarray] = []
        self.inverse_perms: list[np.ndarray] = []
        self.cos: list[np.ndarray] = []
        self.sin: list[np.ndarray] = []
        for _ in range(rounds):
            perm = list(range(dim))
            for i in range(dim - 1, 0, -1):
                j = words.uniform(i + 1)
                perm[i], perm[j] = perm[j], perm[i]
            c = np.empty(pairs)
            s = np.empty(pairs)
            for k in range(pairs):
                while True:
                    x = words.next() / 2147483648.0 - 1.0
                    y = words.next() / 2147483648.0 - 1.0
                    r2 = x * x + y * y
                    if 0.0 < r2 <= 1.0:
                        break
                r = math.sqrt(r2)
                c[k] = x / r
                s[k] = y / r
            p = np.asarray(perm, dtype=np.intp)
            self.perms.append(p)
            self.inverse_perms.append(np.argsort(p))
            self.cos.append(c)
            self.sin.append(s)

    def forward(self, v: np.ndarray) -> np.ndarray:
        """The masked rows of ``v`` (n, dim), float64."""
        end = 2 * (self.dim // 2)
        for perm, c, s in zip(self.perms, self.cos, self.sin, strict=True):
            v = v[:, perm]
            a = v[:, 0:end:2].copy()
            b = v[:, 1:end:2].copy()
            v[:, 0:end:2] = c * a - s * b
            v[:, 1:end:2] = s * a + c * b
        return v

    def inverse(self, v: np.ndarray) -> np.ndarray:
        """The unmasked rows of ``v`` (n, dim), float64: the rounds undone in reverse."""
        end = 2 * (self.dim // 2)
        v = v.copy()
        for inv, c, s in zip(reversed(self.inverse_perms), reversed(self.cos),
                             reversed(self.sin), strict=True):
            a = v[:, 0:end:2].copy()
            b = v[:, 1:end:2].copy()
            v[:, 0:end:2] = c * a + s * b
            v[:, 1:end:2] = c * b - s * a
            v = v[:, inv]
        return v


class VectorMask:
    """A secret orthogonal map of embeddings, derived from ``key`` (the module docstring has
    what it protects and what it does not). ``mask`` and ``unmask`` take one vector (any
    sequence of numbers, or a 1-d array) and return a tuple of floats; the map of each
    dimension is derived once, at its first use, and kept."""

    def __init__(self, key: str | bytes) -> None:
        self._seed = derive_seed(key)
        self._rotations: dict[int, _Rotation] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "VectorMask(<secret>)"

    def _rotation(self, dim: int) -> _Rotation:
        rotation = self._rotations.get(dim)
        if rotation is None:
            with self._lock:
                rotation = self._rotations.get(dim)
                if rotation is None:
                    rotation = self._rotations[dim] = _Rotation(self._seed, dim)
        return rotation

    @staticmethod
    def _rows(vector: Any, field: str) -> np.ndarray:
        if isinstance(vector, (str, bytes)):
            raise InvalidRequest(f"{field}: expected a vector of numbers")
        try:
            v = np.asarray(vector, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidRequest(f"{field}: expected a vector of numbers") from None
        if v.ndim != 1 or not 2 <= v.shape[0] <= MAX_DIM:
            raise InvalidRequest(f"{field}: a masked vector has 2 to {MAX_DIM} numbers, "
                                 f"got shape {v.shape}")
        if not np.all(np.isfinite(v)):
            raise InvalidRequest(f"{field}: expected finite numbers")
        return v.reshape(1, -1)

    def mask(self, vector: Sequence[float] | Any, field: str = "embedding") -> tuple[float, ...]:
        """The masked image of ``vector``."""
        v = self._rows(vector, field)
        return tuple(self._rotation(v.shape[1]).forward(v)[0].tolist())

    def unmask(self, vector: Sequence[float] | Any, field: str = "embedding") -> tuple[float, ...]:
        """The vector whose masked image is ``vector`` (``mask``'s inverse)."""
        v = self._rows(vector, field)
        return tuple(self._rotation(v.shape[1]).inverse(v)[0].tolist())


__all__ = ["VectorMask"]
