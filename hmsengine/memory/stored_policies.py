"""The memory policies a store keeps, so every process applies the same ones to it.

The policies (``MemoryConfig``'s ``supersession``, ``recency``, ``historicalMultiplier``,
``forgetting`` and ``consolidation``) decide what recall answers: under ``latest-by-subject`` two
"Carol lives in ..." facts are one current and one superseded, without it both are current. So
they belong to the store, not to the process that happens to open it: they are recorded in the
store's settings (the ``memory`` section of ``Engine.settings``, in ``format.json``), and the
command line, the server and Python all apply the record.

The rules:

* A store with no record applies the defaults (which change nothing), or the policies a Memory
  was given, and records those given policies before that Memory's first write (a new store made
  with ``Memory(engine, {"supersession": "latest-by-subject"})`` keeps latest-by-subject).
* A store with a record applies it. ``Memory(engine)`` (no config, or one that sets no policy)
  applies it as it is; a config that sets a policy to another value than the record is refused
  (``InvalidRequest`` when the Memory is made), so no process silently answers with other
  policies. Which policies a config sets: the keys of a JSON dict; of a ``MemoryConfig`` value,
  the fields that differ from the defaults.
* ``hms init --store DIR --supersession latest-by-subject`` (:func:`change`) records policies at
  once, and is how a store's record is changed.
* ``hms serve`` and ``hms mcp`` take their ``--memory-config`` policies as those of stores that
  have no record yet (:func:`for_store`): a tenant's record wins over the server's file.

Each engine has one :class:`Record` shared by every Memory over it, updated by whoever writes
the section here; :func:`bind` ties a Memory's core to it, so each core's ``config`` carries the
record (replaced when the record changes: nothing is checked on recall's path) and Memory values
over one engine stay consistent.

(The section and this module are self-contained: the policies themselves are MemoryConfig's;
this module only decides which values a store's Memory applies, and keeps them in the store.)
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import attrs

from ..engine import DocumentEngine
from ..errors import InvalidRequest
from .config import MemoryConfig, parse_config
from .core import MemoryCore, per_engine

SECTION = "memory"
# The JSON names of the policies, in MemoryConfig.to_json's order.
POLICY_KEYS = ("supersession", "recency", "historicalMultiplier", "forgetting", "consolidation")
CHANGE_HINT = ("open it without those policies (Memory(engine) applies the store's), or change "
               "the store's with `hms init --store DIR --supersession ...`")


class Record:
    """The policies one engine's store records (None: no record), and a version that grows with
    every change made through this module."""

    def __init__(self, engine: DocumentEngine) -> None:
        section = engine.settings.get(SECTION)
        self.value: dict[str, Any] | None = None if section is None else _checked(section)
        self.version = 0
        # The cores bound to this record -> the config their caller gave (before the record).
        self.bound: weakref.WeakKeyDictionary[MemoryCore, MemoryConfig] = \
            weakref.WeakKeyDictionary()

    def set(self, value: dict[str, Any]) -> None:
        self.value = value
        self.version += 1
        for core, base in list(self.bound.items()):
            core.config = apply(base, value)


_RECORDS: weakref.WeakKeyDictionary[DocumentEngine, Record] = weakref.WeakKeyDictionary()


def record_of(engine: DocumentEngine) -> Record:
    """The one ``Record`` of ``engine`` (read from its settings at first use)."""
    return per_engine(_RECORDS, engine, Record)


def _checked(section: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded section, validated as a MemoryConfig would be (a damaged one is refused)."""
    unknown = sorted(set(section) - set(POLICY_KEYS))
    if unknown:
        raise InvalidRequest(f"the store's memory policies hold an unknown key {unknown[0]!r}",
                             hint="a newer hmsengine wrote them: use that version")
    return policies_of(parse_config(dict(section)))


def policies_of(config: MemoryConfig) -> dict[str, Any]:
    """The policies of ``config`` as the JSON the store records."""
    full = config.to_json()
    return {key: full[key] for key in POLICY_KEYS}


def given(config: MemoryConfig | Mapping[str, Any] | None) -> dict[str, Any]:
    """The policies a caller's config sets (see the module docstring), as recorded JSON."""
    if config is None:
        return {}
    parsed = parse_config(config)
    full = policies_of(parsed)
    if isinstance(config, MemoryConfig):
        defaults = policies_of(MemoryConfig())
        return {k: v for k, v in full.items() if v != defaults[k]}
    return {k: full[k] for k in POLICY_KEYS if k in config}


def apply(config: MemoryConfig, policies: Mapping[str, Any]) -> MemoryConfig:
    """``config`` with ``policies`` (recorded JSON) in place of its own."""
    merged = parse_config({**config.to_json(), **policies})
    return attrs.evolve(config, supersession=merged.supersession, recency=merged.recency,
                        historical_multiplier=merged.historical_multiplier,
                        forgetting=merged.forgetting, consolidation=merged.consolidation)


def conflict(wanted: Mapping[str, Any], recorded: Mapping[str, Any]) -> InvalidRequest | None:
    """The refusal of a config that sets a policy to another value than the store records."""
    for key, value in wanted.items():
        if recorded.get(key) != value:
            return InvalidRequest(
                f"config.{key}: this store records the memory policy {key} = "
                f"{recorded.get(key)!r}, not {value!r}; every process applies the store's policies",
                hint=CHANGE_HINT)
    return None


def bind(core: MemoryCore, config: MemoryConfig | Mapping[str, Any] | None) -> None:
    """Tie ``core`` (made with ``config`` parsed) to its store's record: ``core.config`` gets the
    recorded policies in place of its own, now and whenever the record changes, and
    ``core.wanted_policies`` the policies ``config`` sets (recorded by ``before_write``).
    ``InvalidRequest`` when ``config`` sets a policy to another value than the store records."""
    wanted = given(config)
    record = record_of(core.engine)
    if record.value is not None:
        problem = conflict(wanted, record.value)
        if problem is not None:
            raise problem
    core.wanted_policies = wanted
    record.bound[core] = core.config
    if record.value is not None:
        core.config = apply(core.config, record.value)


def for_store(engine: DocumentEngine, config: MemoryConfig) -> MemoryConfig:
    """``config`` for a server's or MCP session's Memory over ``engine``: its policies apply
    where the store records none (and are then recorded at the first write), the store's record
    where there is one."""
    recorded = record_of(engine).value
    if recorded is None:
        return config
    return apply(config, recorded)


async def before_write(engine: DocumentEngine, wanted: Mapping[str, Any]) -> None:
    """Record ``wanted`` (the policies a Memory was given) when the store records none;
    ``InvalidRequest`` when it records others (recorded meanwhile by another Memory)."""
    if not wanted:
        return
    record = record_of(engine)
    if record.value is None:
        value = {**policies_of(MemoryConfig()), **wanted}
        await engine.update_settings(SECTION, value)
        record.set(value)
        return
    problem = conflict(wanted, record.value)
    if problem is not None:
        raise problem


async def change(engine: DocumentEngine, policies: Mapping[str, Any]) -> dict[str, Any]:
    """Record ``policies`` (camelCase JSON, any subset of the policy keys) over what the store
    records (or the defaults); the whole record as written. ``InvalidRequest`` for a key that
    is not a policy or a bad value."""
    unknown = sorted(set(policies) - set(POLICY_KEYS))
    if unknown:
        raise InvalidRequest(f"config.{unknown[0]}: not a memory policy the store keeps",
                             hint=f"the policies: {', '.join(POLICY_KEYS)}")
    record = record_of(engine)
    value = policies_of(parse_config({**(record.value or policies_of(MemoryConfig())),
                                      **policies}))
    if value != record.value:
        await engine.update_settings(SECTION, value)
        record.set(value)
    return value


__all__ = ["POLICY_KEYS", "SECTION", "Record", "apply", "before_write", "bind", "change", "conflict",
           "for_store", "given", "policies_of", "record_of"]
