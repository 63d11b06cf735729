"""``MemoryConfig``: the memory API's policies, with defaults that change nothing.

Accepted as a :class:`MemoryConfig` value or its camelCase JSON form::

    {"supersession": "none" | "latest-by-subject",
     "recency": "none" | {"kind": "none"} | {"kind": "exponential", "halfLifeMs": N},
     "importance": "none" | {"kind": "none"} | {"kind": "linear", "weight": W, "missing": M},
     "historicalMultiplier": 1.0,
     "forgetting": {"maxAgeMs": {"episode": N, ...}, "expiredOlderThanMs": N},
     "consolidation": "none" | "exact-duplicates"
                      | {"kind": "none" | "exact-duplicates", "removeSources": false},
     "fileBase": null | "/an/absolute/directory",
     "maxHydrateBytes": 67108864,
     "semanticWeight": 0.3,
     "embedder": "default" | "none"}

The policies (supersession, recency, importance, forgetting, consolidation) are protocols
(memory/policies.py); the JSON form names a built-in one, and a Python caller may pass any
object implementing the protocol instead. The constructor takes the same shorthands as the JSON
form (``recency="none"``, ``importance="none"``, ``consolidation="exact-duplicates"``);
``to_json`` always writes the object form. A configuration holding such an object works
in-process (``Memory(engine, config)``) but has no JSON form: ``to_json`` refuses it, naming the
field, so it can neither be served nor persisted by mistake.

``importance`` (default none) multiplies each recall candidate's score by
``max(0, 1 + weight * importance)``, a fact without importance counting as ``missing``
(default 0, so it keeps its score); with kind none recall's ranking is search's.

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

Unknown keys and bad values are :class:`InvalidRequest` naming the field, from the JSON form and
from the constructor alike.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import attrs

from ..engine import DEFAULT_SEMANTIC_WEIGHT
from ..errors import InvalidRequest
from .policies import (
    SUPERSESSION_POLICIES,
    Consolidation,
    ConsolidationPolicy,
    Forgetting,
    ForgettingPolicy,
    Importance,
    ImportancePolicy,
    LatestBySubject,
    NoSupersession,
    Recency,
    RecencyPolicy,
    SupersessionPolicy,
)

KINDS = ("fact", "profile", "procedure", "episode")
DEFAULT_MAX_HYDRATE_BYTES = 64 * 1024 * 1024
SUPERSESSION = tuple(SUPERSESSION_POLICIES)
RECENCY = ("none", "exponential")
IMPORTANCE = ("none", "linear")
CONSOLIDATION = ("none", "exact-duplicates")
EMBEDDER_CHOICES = ("default", "none")
MAX_IMPORTANCE_WEIGHT = 1000.0
CUSTOM_HINT = ("select a built-in policy by name to serve or persist a configuration; an "
               "object policy works only in-process (Memory(engine, config))")


def _custom(field: str, value: object, protocol: str) -> InvalidRequest:
    return InvalidRequest(f"config.{field}: expected a built-in {field} policy or an object with "
                          f"{protocol}, got {type(value).__name__}")


def _finite(value: object, field: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or not low <= value <= high:
        raise InvalidRequest(f"{field}: expected a number in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def _supersession(value: object) -> str | SupersessionPolicy:
    """A built-in's name (for an instance too: names are the persisted form) or the object."""
    if isinstance(value, str):
        if value not in SUPERSESSION:
            raise InvalidRequest(f"config.supersession: expected one of {', '.join(SUPERSESSION)}, "
                                 f"got {value!r}")
        return value
    if isinstance(value, (NoSupersession, LatestBySubject)):
        return value.name
    if isinstance(value, SupersessionPolicy):
        return value
    raise _custom("supersession", value, "supersedes(newer, older)")


def _recency(value: object) -> Recency | RecencyPolicy:
    if value == "none":  # the JSON shorthand
        return Recency()
    if isinstance(value, Recency):
        if value.kind not in RECENCY:
            raise InvalidRequest(f"config.recency.kind: expected 'none' or 'exponential', "
                                 f"got {value.kind!r}")
        if value.kind == "exponential":
            _positive_int(value.half_life_ms, "config.recency.half_life_ms")
        elif value.half_life_ms is not None:
            raise InvalidRequest("config.recency.half_life_ms: only for kind 'exponential'")
        return value
    if isinstance(value, RecencyPolicy):
        return value
    raise _custom("recency", value, "multiplier(fact, t)")


def _importance(value: object) -> Importance | ImportancePolicy:
    if value == "none":
        return Importance()
    if isinstance(value, Importance):
        if value.kind not in IMPORTANCE:
            raise InvalidRequest(f"config.importance.kind: expected 'none' or 'linear', "
                                 f"got {value.kind!r}")
        _finite(value.weight, "config.importance.weight", 0.0, MAX_IMPORTANCE_WEIGHT)
        _finite(value.missing, "config.importance.missing", -1e9, 1e9)
        return value
    if isinstance(value, ImportancePolicy):
        return value
    raise _custom("importance", value, "multiplier(fact)")


def _forgetting(value: object) -> Forgetting | ForgettingPolicy:
    if isinstance(value, Forgetting):
        for kind, age in value.max_age_ms.items():
            if kind not in KINDS:
                raise InvalidRequest(f"config.forgetting.max_age_ms.{kind}: unknown kind",
                                     hint=f"known: {', '.join(KINDS)}")
            _positive_int(age, f"config.forgetting.max_age_ms.{kind}")
        if value.expired_older_than_ms is not None:
            _positive_int(value.expired_older_than_ms, "config.forgetting.expired_older_than_ms")
        return value
    if isinstance(value, ForgettingPolicy):
        return value
    raise _custom("forgetting", value, "select(facts, now)")


def _consolidation(value: object) -> Consolidation | ConsolidationPolicy:
    if isinstance(value, str):  # a built-in by name
        value = Consolidation(kind=value)
    if isinstance(value, Consolidation):
        if value.kind not in CONSOLIDATION:
            raise InvalidRequest(f"config.consolidation.kind: expected one of "
                                 f"{', '.join(CONSOLIDATION)}")
        if not isinstance(value.remove_sources, bool):
            raise InvalidRequest("config.consolidation.removeSources: expected a bool")
        return value
    if isinstance(value, ConsolidationPolicy):
        if not isinstance(value.remove_sources, bool):
            raise InvalidRequest("config.consolidation.remove_sources: expected a bool")
        return value
    raise _custom("consolidation", value, "merge(facts) and remove_sources")


@attrs.frozen(kw_only=True)
class MemoryConfig:
    """The memory API's policies and settings (the module docstring has the JSON form).

    ``supersession``: ``"none"``, ``"latest-by-subject"`` or a ``SupersessionPolicy``;
    ``recency``: a ``Recency`` or a ``RecencyPolicy``; ``importance``: an ``Importance`` or an
    ``ImportancePolicy``; ``forgetting``: a ``Forgetting`` or a ``ForgettingPolicy``;
    ``consolidation``: a ``Consolidation`` or a ``ConsolidationPolicy`` (memory/policies.py).
    """

    supersession: str | SupersessionPolicy = attrs.field(default="none", converter=_supersession)
    recency: Recency | RecencyPolicy = attrs.field(factory=Recency, converter=_recency)
    importance: Importance | ImportancePolicy = attrs.field(factory=Importance,
                                                            converter=_importance)
    historical_multiplier: float = 1.0
    forgetting: Forgetting | ForgettingPolicy = attrs.field(factory=Forgetting,
                                                            converter=_forgetting)
    consolidation: Consolidation | ConsolidationPolicy = attrs.field(factory=Consolidation,
                                                                     converter=_consolidation)
    file_base: str | None = None
    semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT
    max_hydrate_bytes: int = DEFAULT_MAX_HYDRATE_BYTES
    embedder: str = "default"

    @classmethod
    def from_json(cls, body: object) -> MemoryConfig:
        return parse_config(body)

    def custom_policies(self) -> tuple[str, ...]:
        """The fields holding an object policy rather than a built-in one (no JSON form)."""
        builtin = {"supersession": str, "recency": Recency, "importance": Importance,
                   "forgetting": Forgetting, "consolidation": Consolidation}
        return tuple(name for name, cls in builtin.items()
                     if not isinstance(getattr(self, name), cls))

    def to_json(self) -> dict[str, Any]:
        """The camelCase JSON form; ``InvalidRequest`` naming the field when a policy is an
        object (it has no JSON form). ``importance`` appears only when set (kind linear), so a
        default configuration renders as builds before it read it."""
        custom = self.custom_policies()
        if custom:
            policy = getattr(self, custom[0])
            raise InvalidRequest(f"config.{custom[0]}: the policy {type(policy).__name__} is an "
                                 "object, not a built-in, and has no JSON form", hint=CUSTOM_HINT)
        recency, forgetting, consolidation, importance = (
            self.recency, self.forgetting, self.consolidation, self.importance)
        assert isinstance(recency, Recency) and isinstance(forgetting, Forgetting) \
            and isinstance(consolidation, Consolidation) and isinstance(importance, Importance)
        recency_json: dict[str, Any] = {"kind": recency.kind}
        if recency.half_life_ms is not None:
            recency_json["halfLifeMs"] = recency.half_life_ms
        forgetting_json: dict[str, Any] = {"maxAgeMs": dict(forgetting.max_age_ms)}
        if forgetting.expired_older_than_ms is not None:
            forgetting_json["expiredOlderThanMs"] = forgetting.expired_older_than_ms
        out: dict[str, Any] = {"supersession": self.supersession, "recency": recency_json}
        if importance.kind != "none":
            out["importance"] = {"kind": importance.kind, "weight": importance.weight,
                                 "missing": importance.missing}
        out.update({
            "historicalMultiplier": self.historical_multiplier, "forgetting": forgetting_json,
            "consolidation": {"kind": consolidation.kind,
                              "removeSources": consolidation.remove_sources},
            "fileBase": self.file_base,
            "semanticWeight": self.semantic_weight,
            "maxHydrateBytes": self.max_hydrate_bytes,
            "embedder": self.embedder,
        })
        return out


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
    top = _object(body, "config", {"supersession", "recency", "importance",
                                   "historicalMultiplier", "forgetting", "consolidation",
                                   "fileBase", "semanticWeight", "maxHydrateBytes", "embedder"})
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
    importance = _parse_importance(top["importance"]) if "importance" in top else Importance()
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
        raw = top["consolidation"]
        if isinstance(raw, str):  # a built-in by name, as the constructor takes it
            raw = {"kind": raw}
        c = _object(raw, "config.consolidation", {"kind", "removeSources"})
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
    return MemoryConfig(supersession=supersession, recency=recency, importance=importance,
                        historical_multiplier=float(multiplier), forgetting=forgetting,
                        consolidation=consolidation, file_base=file_base,
                        semantic_weight=float(weight), max_hydrate_bytes=max_hydrate,
                        embedder=embedder)


def _parse_importance(raw: object) -> Importance:
    """``importance``'s JSON form: ``"none"``, ``{"kind": "none"}`` or ``{"kind": "linear",
    "weight": W, "missing": M}`` (weight in [0, 1000], default 1; missing default 0)."""
    if raw == "none":
        raw = {"kind": "none"}
    i = _object(raw, "config.importance", {"kind", "weight", "missing"})
    kind = i.get("kind", "none")
    if kind == "none":
        if "weight" in i or "missing" in i:
            raise InvalidRequest("config.importance: weight and missing are only for kind 'linear'")
        return Importance()
    if kind != "linear":
        raise InvalidRequest(f"config.importance.kind: expected 'none' or 'linear', got {kind!r}")
    return Importance(kind="linear",
                      weight=_finite(i.get("weight", 1.0), "config.importance.weight", 0.0,
                                     MAX_IMPORTANCE_WEIGHT),
                      missing=_finite(i.get("missing", 0.0), "config.importance.missing", -1e9, 1e9))
