"""The memory policies a store keeps, so every process applies the same ones to it.

The policies (``MemoryConfig``'s ``supersession``, ``recency``, ``importance``,
``historicalMultiplier``, ``forgetting`` and ``consolidation``) decide what recall answers: under
``latest-by-subject`` two "Carol lives in ..." facts are one current and one superseded, without
it both are current. So
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
* ``importance`` is kept like the others, recorded only when it is not "none" (a record without
  it means none, so records without importance read as before).
* A policy given as an object (Python only: ``MemoryConfig(supersession=MyPolicy())``) has no
  JSON form and is never recorded: it applies in its own process only, and the store (so every
  other process) keeps the default for it, or the named policies the same config also gives.
  It is accepted where the store keeps the default for that policy (or keeps nothing) and
  refused (``InvalidRequest``) where the store keeps another value, which it cannot replace.

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
# The JSON names of the policies, in MemoryConfig.to_json's order. ``importance`` is recorded
# only when it is not "none" (absent means none: a record without it reads as before).
POLICY_KEYS = ("supersession", "recency", "importance", "historicalMultiplier", "forgetting",
               "consolidation")
# The policies a Python caller may give as an object (MemoryConfig.custom_policies): JSON key =
# field name.
OBJECT_POLICIES = ("supersession", "recency", "importance", "forgetting", "consolidation")
# What ``given`` says of a policy given as an object: it has no JSON form and is never recorded.
OBJECT = "(an object)"
OBJECT_HINT = ("give the built-in by name, or record the default for that policy (`hms init "
               "--store DIR --memory-config FILE`) to apply an object policy in this process")
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


def _named(config: MemoryConfig) -> MemoryConfig:
    """``config`` with each object policy replaced by the default built-in (so it has JSON)."""
    custom = config.custom_policies()
    if not custom:
        return config
    return attrs.evolve(config, **{f: getattr(_DEFAULT, f) for f in custom})


def policies_of(config: MemoryConfig) -> dict[str, Any]:
    """The named policies of ``config`` as the JSON the store records (an object policy has
    no JSON form: the default stands in for it; ``importance`` only when not "none")."""
    full = _named(config).to_json()
    return {key: full[key] for key in POLICY_KEYS if key in full}


_DEFAULT = MemoryConfig()
DEFAULTS = policies_of(_DEFAULT)


def _value(policies: Mapping[str, Any], key: str) -> Any:
    """A policy's recorded JSON in ``policies``, the default's where it is absent."""
    return policies.get(key, DEFAULTS.get(key))


def given(config: MemoryConfig | Mapping[str, Any] | None) -> dict[str, Any]:
    """The policies a caller's config sets (see the module docstring), as recorded JSON, or
    ``OBJECT`` for one given as an object (a MemoryConfig value only)."""
    if config is None:
        return {}
    parsed = parse_config(config)
    full = policies_of(parsed)
    if isinstance(config, MemoryConfig):
        wanted: dict[str, Any] = {k: v for k, v in full.items() if v != _value(DEFAULTS, k)}
        wanted.update(dict.fromkeys(parsed.custom_policies(), OBJECT))
        return wanted
    return {k: _value(full, k) for k in POLICY_KEYS if k in config}


def apply(config: MemoryConfig, policies: Mapping[str, Any]) -> MemoryConfig:
    """``config`` with ``policies`` (recorded JSON) in place of its own; an object policy of
    ``config`` stays where the record holds the default for it."""
    merged = parse_config({**_named(config).to_json(), "importance": "none", **policies})
    kept = {f: getattr(config, f) for f in config.custom_policies()
            if _value(policies, f) == _value(DEFAULTS, f)}
    fields = {f: getattr(merged, f) for f in OBJECT_POLICIES}
    return attrs.evolve(config, historical_multiplier=merged.historical_multiplier,
                        **{**fields, **kept})


def conflict(wanted: Mapping[str, Any], recorded: Mapping[str, Any]) -> InvalidRequest | None:
    """The refusal of a config that sets a policy to another value than the store records; an
    object policy conflicts with a record that holds anything but the default for it."""
    for key, value in wanted.items():
        have = _value(recorded, key)
        if value is OBJECT:
            if have != _value(DEFAULTS, key):
                return InvalidRequest(
                    f"config.{key}: this store records the memory policy {key} = {have!r}; an "
                    "object policy applies only in its own process and cannot replace a policy "
                    "the store keeps", hint=OBJECT_HINT)
        elif have != value:
            return InvalidRequest(
                f"config.{key}: this store records the memory policy {key} = "
                f"{have!r}, not {value!r}; every process applies the store's policies",
                hint=CHANGE_HINT)
    return None


def recordable(wanted: Mapping[str, Any]) -> dict[str, Any]:
    """``wanted`` without the object policies (which are never recorded)."""
    return {k: v for k, v in wanted.items() if v is not OBJECT}


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
        named = recordable(wanted)
        if not named:
            return  # object policies only: nothing to record (the defaults stand)
        value = policies_of(parse_config({**DEFAULTS, **named}))
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
    value = policies_of(parse_config({**(record.value or DEFAULTS), **policies}))
    if value != record.value:
        await engine.update_settings(SECTION, value)
        record.set(value)
    return value


__all__ = [
    "DEFAULTS",
    "OBJECT",
    "POLICY_KEYS",
    "SECTION",
    "Record",
    "apply",
    "before_write",
    "bind",
    "change",
    "conflict",
    "for_store",
    "given",
    "policies_of",
    "record_of",
    "recordable",
]
