"""Declared per-key state for stateful functions: typed values, maps and lists, with a TTL.

A declaration (:class:`Value`, :class:`MapOf`, :class:`ListOf`) says the type of what is kept and
how long a write stays visible. Time is event time only: an entry written at ``t`` with a TTL is
seen by events before ``t + ttl`` and by none at or after it, so every replay reads the same
values; the operator drops it for good once the grace horizon passes ``t + ttl``. Writes are
type-checked, so a wrong value fails where it is written, naming the state.

At run time each key's state lives in plain Python (:class:`KeyState`); between batches it is
JSON (:func:`encode` / :func:`decode`), one document per key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from streaming.operators.errors import BatchError, OperatorConfigError

SCALARS: tuple[type, ...] = (int, float, str, bool, Decimal)
"""Value types; ``dict`` and ``list`` hold JSON-like values (str keys, scalars, nesting)."""
TYPES: tuple[type, ...] = (*SCALARS, dict, list)
RESERVED = frozenset({"key", "time", "input", "tombstone", "timers"})


def _ttl_ms(ttl: timedelta | None, what: str) -> int | None:
    if ttl is None:
        return None
    if not isinstance(ttl, timedelta) or ttl <= timedelta(0):
        msg = f"{what}: ttl must be a positive timedelta, e.g. ttl=timedelta(hours=1)"
        raise OperatorConfigError(msg)
    return int(ttl / timedelta(milliseconds=1))


def _type(kind: Any, what: str) -> type:
    if kind not in TYPES:
        names = ", ".join(t.__name__ for t in TYPES)
        msg = f"{what}: type {kind!r} is not one of {names}"
        raise OperatorConfigError(msg)
    return kind


@dataclass(frozen=True)
class Value:
    """One value per key, ``default`` until written (e.g. ``Value(int, default=0)``)."""

    type: type
    default: Any = None
    ttl: timedelta | None = None

    def check(self, name: str) -> None:
        _type(self.type, f"state {name!r}")
        _ttl_ms(self.ttl, f"state {name!r}")
        if self.default is not None:
            check_value(self.type, self.default, f"state {name!r}: default")


@dataclass(frozen=True)
class MapOf:
    """A map per key (``MapOf(str, int)``); keys are ``str`` or ``int``; the TTL is per entry."""

    key_type: type
    value_type: type
    ttl: timedelta | None = None

    def check(self, name: str) -> None:
        if self.key_type not in (str, int):
            msg = f"state {name!r}: map keys must be str or int, not {self.key_type!r}"
            raise OperatorConfigError(msg)
        _type(self.value_type, f"state {name!r}")
        _ttl_ms(self.ttl, f"state {name!r}")


@dataclass(frozen=True)
class ListOf:
    """A list per key (``ListOf(str)``); the TTL is per element."""

    type: type
    ttl: timedelta | None = None

    def check(self, name: str) -> None:
        _type(self.type, f"state {name!r}")
        _ttl_ms(self.ttl, f"state {name!r}")


StateSpec = Value | MapOf | ListOf


def check_specs(specs: Mapping[str, StateSpec]) -> None:
    """Reject bad names and declarations (raised when the function is declared)."""
    for name, spec in specs.items():
        if not name.isidentifier() or name.startswith("_") or name in RESERVED:
            msg = (
                f"state {name!r}: use an identifier not starting with '_' and not one of "
                f"{sorted(RESERVED)}"
            )
            raise OperatorConfigError(msg)
        if not isinstance(spec, (Value, MapOf, ListOf)):
            msg = f"state {name!r}: declare Value(type), MapOf(key_type, type) or ListOf(type)"
            raise OperatorConfigError(msg)
        spec.check(name)


def check_value(kind: type, value: Any, what: str) -> None:
    """Raise BatchError unless ``value`` is of ``kind`` (an int is no bool, and vice versa)."""
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        msg = f"{what}: expected {kind.__name__}, got {type(value).__name__} {value!r}"
        raise BatchError(msg)


def _scalar_out(kind: type, value: Any) -> Any:
    return str(value) if kind is Decimal else value


def _scalar_in(kind: type, value: Any) -> Any:
    if kind is Decimal:
        return Decimal(value)
    if kind is float:
        return float(value)
    return value


_DECIMAL = "$decimal"


def _tagged(value: Any) -> Any:
    """JSON for a decimal inside a dict or list value (a tagged object, read back exactly)."""
    if isinstance(value, Decimal):
        return {_DECIMAL: str(value)}
    msg = f"a value of type {type(value).__name__} ({value!r})"
    raise TypeError(msg)


def _untagged(obj: dict[str, Any]) -> Any:
    return Decimal(obj[_DECIMAL]) if len(obj) == 1 and _DECIMAL in obj else obj


class Clock:
    """The event time a function is at: the current record's or timer's."""

    now: int = 0


class ValueState:
    """A declared value of one key (``get``, ``set``, ``clear``, ``exists``)."""

    def __init__(self, name: str, spec: Value, cell: dict[str, Any], clock: Clock) -> None:
        self._name, self._spec, self._cell, self._clock = name, spec, cell, clock
        self._ttl = _ttl_ms(spec.ttl, name)

    def _live(self) -> bool:
        entry = self._cell.get(self._name)
        return entry is not None and (self._ttl is None or self._clock.now < entry[1] + self._ttl)

    def get(self) -> Any:
        return self._cell[self._name][0] if self._live() else self._spec.default

    def exists(self) -> bool:
        return self._live()

    def set(self, value: Any) -> None:
        check_value(self._spec.type, value, f"state {self._name!r}")
        self._cell[self._name] = (value, self._clock.now)

    def clear(self) -> None:
        self._cell.pop(self._name, None)


class MapState:
    """A declared map of one key: ``m[k]``, ``m[k] = v``, ``del m[k]``, ``k in m``, ``get``,
    ``keys``, ``values``, ``items``, ``len``, ``clear``. Entries past their TTL are absent."""

    def __init__(self, name: str, spec: MapOf, entries: dict[Any, Any], clock: Clock) -> None:
        self._name, self._spec, self._entries, self._clock = name, spec, entries, clock
        self._ttl = _ttl_ms(spec.ttl, name)

    def _live(self, entry: tuple[Any, int]) -> bool:
        return self._ttl is None or self._clock.now < entry[1] + self._ttl

    def __getitem__(self, key: Any) -> Any:
        entry = self._entries.get(key)
        if entry is None or not self._live(entry):
            raise KeyError(key)
        return entry[0]

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __setitem__(self, key: Any, value: Any) -> None:
        check_value(self._spec.key_type, key, f"state {self._name!r}: key")
        check_value(self._spec.value_type, value, f"state {self._name!r}: value")
        self._entries[key] = (value, self._clock.now)

    def __delitem__(self, key: Any) -> None:
        self._entries.pop(key, None)

    def __contains__(self, key: object) -> bool:
        entry = self._entries.get(key)
        return entry is not None and self._live(entry)

    def items(self) -> list[tuple[Any, Any]]:
        return [(k, e[0]) for k, e in self._entries.items() if self._live(e)]

    def keys(self) -> list[Any]:
        return [k for k, _ in self.items()]

    def values(self) -> list[Any]:
        return [v for _, v in self.items()]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.items())

    def clear(self) -> None:
        self._entries.clear()


class ListState:
    """A declared list of one key: ``append``, ``extend``, ``get`` (the live elements in order),
    ``iter``, ``len``, ``clear``. Elements past their TTL are absent."""

    def __init__(self, name: str, spec: ListOf, items: list[Any], clock: Clock) -> None:
        self._name, self._spec, self._items, self._clock = name, spec, items, clock
        self._ttl = _ttl_ms(spec.ttl, name)

    def append(self, value: Any) -> None:
        check_value(self._spec.type, value, f"state {self._name!r}")
        self._items.append((value, self._clock.now))

    def extend(self, values: list[Any]) -> None:
        for value in values:
            self.append(value)

    def get(self) -> list[Any]:
        now, ttl = self._clock.now, self._ttl
        return [v for v, t in self._items if ttl is None or now < t + ttl]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())

    def __len__(self) -> int:
        return len(self.get())

    def clear(self) -> None:
        self._items.clear()


class Timers:
    """Event-time timers of one key. A timer at ``t`` fires once every record before ``t`` is
    final (the grace horizon reached ``t``), before the records at ``t``; one at or before the
    current time fires at the next millisecond. One timer per time: registering twice is one."""

    def __init__(self, pending: set[int], clock: Clock) -> None:
        self._pending, self._clock = pending, clock
        self.earliest: int | None = None  # the earliest registered, deleted or not

    def register(self, time: int) -> None:
        if not isinstance(time, int) or isinstance(time, bool):
            msg = f"a timer's time is an int (epoch ms), not {time!r}"
            raise BatchError(msg)
        time = max(time, self._clock.now + 1)
        self._pending.add(time)
        self.earliest = time if self.earliest is None else min(self.earliest, time)

    def delete(self, time: int) -> None:
        self._pending.discard(time)

    def pending(self) -> list[int]:
        return sorted(self._pending)


@dataclass
class KeyData:
    """One key's state in Python: declared values, maps and lists, and pending timers."""

    cells: dict[str, Any]
    timers: set[int]


class KeyState:
    """What a function sees of its key: the declared state as attributes, ``key`` (the key
    columns' values), ``time`` (the current event time), ``input`` (the input the current
    record came from; None in a timer), ``tombstone`` (whether the current record is a
    changelog input's tombstone: its value columns are null) and ``timers``."""

    def __init__(
        self, specs: Mapping[str, StateSpec], data: KeyData, key: Mapping[str, Any]
    ) -> None:
        self._clock = Clock()
        self.key = dict(key)
        self.input: str | None = None
        self.tombstone = False
        self.timers = Timers(data.timers, self._clock)
        self._handles: dict[str, Any] = {}
        for name, spec in specs.items():
            if isinstance(spec, Value):
                self._handles[name] = ValueState(name, spec, data.cells, self._clock)
            elif isinstance(spec, MapOf):
                entries = data.cells.setdefault(name, {})
                self._handles[name] = MapState(name, spec, entries, self._clock)
            else:
                items = data.cells.setdefault(name, [])
                self._handles[name] = ListState(name, spec, items, self._clock)

    @property
    def time(self) -> int:
        return self._clock.now

    def at(self, time: int, source: str | None, tombstone: bool = False) -> None:
        """Move to the event at ``time`` (from input ``source``; None for a timer)."""
        self._clock.now = time
        self.input = source
        self.tombstone = tombstone

    def __getattr__(self, name: str) -> Any:
        handles = self.__dict__.get("_handles", {})
        if name in handles:
            return handles[name]
        msg = f"no state {name!r}; declared: {sorted(handles)}"
        raise AttributeError(msg)


def expire(specs: Mapping[str, StateSpec], data: KeyData, horizon: int) -> None:
    """Drop every entry no event at or after ``horizon`` can see (its TTL ran out)."""
    for name, spec in specs.items():
        ttl = _ttl_ms(spec.ttl, name)
        if ttl is None or name not in data.cells:
            continue
        cell = data.cells[name]
        if isinstance(spec, Value):
            if cell is not None and cell[1] + ttl <= horizon:
                del data.cells[name]
        elif isinstance(spec, MapOf):
            for key in [k for k, e in cell.items() if e[1] + ttl <= horizon]:
                del cell[key]
        else:
            cell[:] = [e for e in cell if e[1] + ttl > horizon]


def encode(specs: Mapping[str, StateSpec], data: KeyData) -> str | None:
    """One key's state as JSON; None when it holds nothing (the key can be forgotten)."""
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        cell = data.cells.get(name)
        if cell is None or (not isinstance(spec, Value) and not cell):
            continue
        try:
            if isinstance(spec, Value):
                out[name] = [_scalar_out(spec.type, cell[0]), cell[1]]
            elif isinstance(spec, MapOf):
                kind = spec.value_type
                out[name] = [[k, _scalar_out(kind, v), t] for k, (v, t) in cell.items()]
            else:
                out[name] = [[_scalar_out(spec.type, v), t] for v, t in cell]
        except (TypeError, ValueError) as exc:
            msg = f"state {name!r} holds a value JSON cannot keep ({exc})"
            raise BatchError(msg) from None
    if not out and not data.timers:
        return None
    try:
        document = {"s": out, "t": sorted(data.timers)}
        return json.dumps(document, separators=(",", ":"), default=_tagged)
    except (TypeError, ValueError) as exc:
        msg = f"a state value cannot be kept: {exc}; keep str, int, float, bool, Decimal, or "
        msg += "dicts and lists of them"
        raise BatchError(msg) from None


def decode(specs: Mapping[str, StateSpec], text: str | None) -> KeyData:
    """The state :func:`encode` wrote (a fresh copy every call)."""
    if text is None:
        return KeyData({}, set())
    raw = json.loads(text, object_hook=_untagged)
    cells: dict[str, Any] = {}
    for name, value in raw["s"].items():
        spec = specs[name]
        if isinstance(spec, Value):
            cells[name] = (_scalar_in(spec.type, value[0]), value[1])
        elif isinstance(spec, MapOf):
            kind = spec.value_type
            cells[name] = {k: (_scalar_in(kind, v), t) for k, v, t in value}
        else:
            cells[name] = [(_scalar_in(spec.type, v), t) for v, t in value]
    return KeyData(cells, set(raw["t"]))
