"""``MemoryConfig``: the memory API's policies, plain data with defaults that change nothing.

Accepted as a :class:`MemoryConfig` value or its camelCase JSON form::

    {"supersession": "none" | "latest-by-subject",
     "recency": {"kind": "none"} | {"kind": "exponential", "halfLifeMs": N},
     "historicalMultiplier": 1.0,
     "forgetting": {"maxAgeMs": {"episode": N, ...}, "expiredOlderThanMs": N},
     "consolidation": {"kind": "none" | "exact-duplicates", "removeSources": false},
     "fileBase": null | "/an/absolute/directory",
     "maxHydrateBytes": 67108864,
     "semanticWeight": 0.3,
     "embedder": "default" | "none"}

``semanticWeight`` weighs the embedding channel against BM25 (weight 1) in recall's reciprocal
rank fusion, when a query has an embedding (given, or made by the Memory's embedder). 0.3 is the
weight tuned on LoCoMo's training conversations (bench/quality.py); at 1 the fusion was worse
than BM25 alone on the held-out ones.

``embedder``: ``"default"`` lets a new store embed with the bundled default embedder when the
``embed`` extra is installed (hybrid recall); ``"none"`` keeps a new store lexical. A store that
records an embedder keeps using it whatever this says (memory/embedding.py).

``fileBase`` is where file-backed memories' relative paths are resolved; when set, every file
(relative, absolute or ``file://``) must also lie inside it, and the JSON contract (server, MCP)
reads files only when it is set. ``maxHydrateBytes`` bounds the range one ``hydrate`` reads
(64 MiB by default; a larger recorded range is refused before anything is read).

Unknown keys and bad values are :class:`InvalidRequest` naming the field.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import attrs

from ..engine import DEFAULT_SEMANTIC_WEIGHT
from ..errors import InvalidRequest

KINDS = ("fact", "profile", "procedure", "episode")
DEFAULT_MAX_HYDRATE_BYTES = 64 * 1024 * 1024
SUPERSESSION = ("none", "latest-by-subject")
CONSOLIDATION = ("none", "exact-duplicates")
EMBEDDER_CHOICES = ("default", "none")


@attrs.frozen(kw_only=True)
class Recency:
    kind: str = "none"
    half_life_ms: int | None = None


@attrs.frozen(kw_only=True)
class Forgetting:
    """What ``apply_forgetting`` removes (it never runs by itself): facts older than a maximum
    age for their kind (by ingest time), and expired facts whose ``valid_to`` is older than
    ``expired_older_than_ms``."""

    max_age_ms: dict[str, int] = attrs.field(factory=dict)
    expired_older_than_ms: int | None = None


@attrs.frozen(kw_only=True)
class Consolidation:
    """What ``consolidate`` does: with ``exact-duplicates``, facts of one subject whose
    normalised texts are equal get one new fact superseding them; ``remove_sources`` also
    forgets the sources (only when the call sets ``allow_destructive``)."""

    kind: str = "none"
    remove_sources: bool = False


@attrs.frozen(kw_only=True)
class MemoryConfig:
    supersession: str = "none"
    recency: Recency = Recency()
    historical_multiplier: float = 1.0
    forgetting: Forgetting = Forgetting()
    consolidation: Consolidation = Consolidation()
    file_base: str | None = None
    semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT
    max_hydrate_bytes: int = DEFAULT_MAX_HYDRATE_BYTES
    embedder: str = "default"

    @classmethod
    def from_json(cls, body: object) -> MemoryConfig:
        return parse_config(body)

    def to_json(self) -> dict[str, Any]:
        recency: dict[str, Any] = {"kind": self.recency.kind}
        if self.recency.half_life_ms is not None:
            recency["halfLifeMs"] = self.recency.half_life_ms
        forgetting: dict[str, Any] = {"maxAgeMs": dict(self.forgetting.max_age_ms)}
        if self.forgetting.expired_older_than_ms is not None:
            forgetting["expiredOlderThanMs"] = self.forgetting.expired_older_than_ms
        return {
            "supersession": self.supersession, "recency": recency,
            "historicalMultiplier": self.historical_multiplier, "forgetting": forgetting,
            "consolidation": {"kind": self.consolidation.kind,
                              "removeSources": self.consolidation.remove_sources},
            "fileBase": self.file_base,
            "semanticWeight": self.semantic_weight,
            "maxHydrateBytes": self.max_hydrate_bytes,
            "embedder": self.embedder,
        }


def _object(value: object, field: str, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidRequest(f"{field}: expected an object, got {type(value).__name__}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise InvalidRequest(f"{field}.{unknown[0]}: unknown field",
                             hint=f"known: {', '.join(sorted(allowed))}")
    return value


def _positive_int(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidRequest(f"{field}: expected a positive integer (ms), got {value!r}")
    return value


def parse_config(body: object) -> MemoryConfig:
    """A :class:`MemoryConfig` from itself, None (defaults) or its camelCase JSON dict."""
    if body is None:
        return MemoryConfig()
    if isinstance(body, MemoryConfig):
        return body
    top = _object(body, "config", {"supersession", "recency", "historicalMultiplier",
                                   "forgetting", "consolidation", "fileBase", "semanticWeight",
                                   "maxHydrateBytes", "embedder"})
    supersession = top.get("supersession", "none")
    if supersession not in SUPERSESSION:
        raise InvalidRequest(f"config.supersession: expected one of {', '.join(SUPERSESSION)}, "
                             f"got {supersession!r}")
    recency = Recency()
    if "recency" in top:
        raw = top["recency"]
        if raw == "none":
            raw = {"kind": "none"}
        r = _object(raw, "config.recency", {"kind", "halfLifeMs"})
        kind = r.get("kind", "none")
        if kind == "none":
            if "halfLifeMs" in r:
                raise InvalidRequest("config.recency.halfLifeMs: only for kind 'exponential'")
        elif kind == "exponential":
            recency = Recency(kind=kind, half_life_ms=_positive_int(r.get("halfLifeMs"),
                                                                     "config.recency.halfLifeMs"))
        else:
            raise InvalidRequest(f"config.recency.kind: expected 'none' or 'exponential', got {kind!r}")
    multiplier = top.get("historicalMultiplier", 1.0)
    if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) \
            or not math.isfinite(multiplier) or not 0 <= multiplier <= 1:
        raise InvalidRequest(f"config.historicalMultiplier: expected a number in [0, 1], got {multiplier!r}")
    forgetting = Forgetting()
    if "forgetting" in top:
        f = _object(top["forgetting"], "config.forgetting", {"maxAgeMs", "expiredOlderThanMs"})
        ages = _object(f.get("maxAgeMs", {}), "config.forgetting.maxAgeMs", set(KINDS))
        forgetting = Forgetting(
            max_age_ms={k: _positive_int(v, f"config.forgetting.maxAgeMs.{k}") for k, v in ages.items()},
            expired_older_than_ms=(None if f.get("expiredOlderThanMs") is None else
                                   _positive_int(f["expiredOlderThanMs"],
                                                 "config.forgetting.expiredOlderThanMs")),
        )
    consolidation = Consolidation()
    if "consolidation" in top:
        c = _object(top["consolidation"], "config.consolidation", {"kind", "removeSources"})
        kind = c.get("kind", "none")
        if kind not in CONSOLIDATION:
            raise InvalidRequest(f"config.consolidation.kind: expected one of {', '.join(CONSOLIDATION)}")
        remove = c.get("removeSources", False)
        if not isinstance(remove, bool):
            raise InvalidRequest("config.consolidation.removeSources: expected a bool")
        consolidation = Consolidation(kind=kind, remove_sources=remove)
    file_base = top.get("fileBase")
    if file_base is not None and (not isinstance(file_base, str) or not os.path.isabs(file_base)):
        raise InvalidRequest(f"config.fileBase: expected an absolute directory path, got {file_base!r}")
    weight = top.get("semanticWeight", DEFAULT_SEMANTIC_WEIGHT)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) \
            or not 0 <= weight <= 10:
        raise InvalidRequest(f"config.semanticWeight: expected a number in [0, 10], got {weight!r}")
    max_hydrate = top.get("maxHydrateBytes", DEFAULT_MAX_HYDRATE_BYTES)
    if isinstance(max_hydrate, bool) or not isinstance(max_hydrate, int) or max_hydrate < 1:
        raise InvalidRequest(f"config.maxHydrateBytes: expected a positive integer, got {max_hydrate!r}")
    embedder = top.get("embedder", "default")
    if embedder not in EMBEDDER_CHOICES:
        raise InvalidRequest(f"config.embedder: expected one of {', '.join(EMBEDDER_CHOICES)}, "
                             f"got {embedder!r}")
    return MemoryConfig(supersession=supersession, recency=recency,
                        historical_multiplier=float(multiplier), forgetting=forgetting,
                        consolidation=consolidation, file_base=file_base,
                        semantic_weight=float(weight), max_hydrate_bytes=max_hydrate,
                        embedder=embedder)
