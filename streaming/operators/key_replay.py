"""Running a stateful function over one key's events so its output is exact on every log prefix.

A key's events (its records, and timers) are processed in event-time order. Records below the
grace horizon can no longer change, so the state after them is kept (the key's *base*, as of its
*boundary*) and they are forgotten; records at or above it are kept in a buffer. Each batch that
touches a key:

1. folds into the base the buffered records below the new horizon, with every timer at or below
   it fired at its place among them (a timer at ``t`` after the records before ``t``), then drops
   state entries whose TTL ran out;
2. runs the function again from the base over the whole buffer, in order, as if the log had been
   replayed from the start: an out-of-order record within grace is simply in its place now.
   Timers do not fire here: every record before them is not final yet.

Rows emitted by folding are final; rows emitted by the buffer are the current, correctable
estimate ("emit early and correct"). The table of a prefix is therefore: per output key, the
row of the last event (record or fired timer) that emitted it, the function run per key over the
prefix's records that are not late, with exactly the timers at or below the horizon fired.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from streaming.operators.batch import DELETE
from streaming.operators.errors import BatchError
from streaming.operators.keyed_state import KeyData, KeyState, StateSpec, decode, encode, expire

Row = dict[str, Any]
Position = tuple[int, int, int, int, int]
"""(time, 0 for a timer and 1 for a record, input rank, partition, offset)."""


@dataclass(frozen=True)
class Delete:
    """Emitted to delete an output row: ``Delete(txn_id="t1")`` names its key columns."""

    key: Mapping[str, Any]

    def __init__(self, **key: Any) -> None:
        object.__setattr__(self, "key", key)


class KeyedFunction(Protocol):
    """What the stateful operator runs per key (``streaming.define.stateful.Stateful``)."""

    @property
    def name(self) -> str:
        """How messages name it."""
        ...

    @property
    def state(self) -> Mapping[str, StateSpec]: ...

    @property
    def output(self) -> pa.Schema:
        """The rows it emits (key columns among them)."""
        ...

    @property
    def key(self) -> tuple[str, ...]:
        """The output table's key columns."""
        ...

    def process(self, record: Row, state: KeyState) -> Any:
        """Handle one record; return None, a row, a ``Delete`` or an iterable of them."""
        ...

    def on_timer(self, time: int, state: KeyState) -> Any:
        """Handle a timer at ``time``, returning like ``process``."""
        ...


@dataclass(frozen=True, order=True)
class Event:
    """A buffered record of a key."""

    position: Position
    source: str = field(compare=False)
    record: Row = field(compare=False)

    @property
    def time(self) -> int:
        return self.position[0]


@dataclass(frozen=True)
class Emission:
    key: tuple[Any, ...]
    row: Row | None  # None: a delete


@dataclass(frozen=True)
class KeyOutcome:
    """One key after a batch: its new base and what its events emitted."""

    base: str | None
    boundary: int | None
    next_timer: int | None
    kept: list[Event]  # the buffer after folding
    folded: list[Emission]  # final rows, in order
    current: list[Emission]  # the buffer's rows, in order


def replay(
    function: KeyedFunction,
    key: Mapping[str, Any],
    base: str | None,
    boundary: int | None,
    events: Sequence[Event],
    horizon: int | None,
) -> KeyOutcome:
    """Fold ``events`` below ``horizon`` into ``base`` and run the rest (see the module
    docstring). ``events`` must be sorted and none below ``boundary``."""
    data = decode(function.state, base)
    folded: list[Emission] = []
    kept = list(events)
    if horizon is not None and (boundary is None or horizon > boundary):
        done = [e for e in kept if e.time < horizon]
        kept = kept[len(done) :]
        _fold(function, key, data, done, horizon, folded)
        expire(function.state, data, horizon)
        boundary = horizon
    text = encode(function.state, data)
    speculative = decode(function.state, text)
    state = KeyState(function.state, speculative, key)
    current: list[Emission] = []
    for event in kept:
        state.at(event.time, event.source, _tombstone(event))
        result = _call(function, key, event, lambda e=event: function.process(_record(e), state))
        current += _emissions(function, result)
    # The key must be replayed once the horizon reaches a timer of its base, or one its
    # buffered records registered (even if a later one deleted it: folding decides).
    due = [*data.timers, *([] if state.timers.earliest is None else [state.timers.earliest])]
    next_timer = min(due) if due else None
    return KeyOutcome(text, boundary, next_timer, kept, folded, current)


def _fold(
    function: KeyedFunction,
    key: Mapping[str, Any],
    data: KeyData,
    events: list[Event],
    horizon: int,
    out: list[Emission],
) -> None:
    """Process ``events`` and the timers at or below ``horizon`` in order, into ``data``."""
    state = KeyState(function.state, data, key)
    position = 0
    while True:
        due = min(data.timers) if data.timers else None
        if due is not None and due > horizon:
            due = None
        event = events[position] if position < len(events) else None
        if due is not None and (event is None or due <= event.time):
            data.timers.discard(due)
            state.at(due, None)
            result = _call(function, key, due, lambda t=due: function.on_timer(t, state))
            out += _emissions(function, result)
        elif event is not None:
            state.at(event.time, event.source, _tombstone(event))
            record = _record(event)
            result = _call(function, key, event, lambda r=record: function.process(r, state))
            out += _emissions(function, result)
            position += 1
        else:
            return


def _call(
    function: KeyedFunction, key: Mapping[str, Any], at: Event | int, call: Callable[[], Any]
) -> Any:
    """Run the function, naming the key and the event in any error it raises."""
    try:
        return call()
    except BatchError:
        raise
    except Exception as exc:
        if isinstance(at, Event):
            where = f"the {at.source} record at partition {at.position[3]} offset {at.position[4]}"
            where += f" (event time {at.time})"
        else:
            where = f"its timer at {at}"
        msg = f"{function.name} raised {type(exc).__name__}: {exc}, on key {dict(key)} at {where}"
        raise BatchError(msg) from exc


def _tombstone(event: Event) -> bool:
    """Whether the record is a changelog input's tombstone (``_delete`` set)."""
    return bool(event.record.get(DELETE))


def _record(event: Event) -> Row:
    """The record as the function sees it: its user columns only."""
    return {k: v for k, v in event.record.items() if not k.startswith("_")}


def _emissions(function: KeyedFunction, result: Any) -> list[Emission]:
    if result is None:
        return []
    if isinstance(result, (dict, Delete)):
        result = [result]
    if not isinstance(result, Iterable):
        msg = f"{function.name} returned {result!r}: return rows (dicts), Delete(...) or None"
        raise BatchError(msg)
    names = set(function.output.names)
    out = []
    for item in result:
        if isinstance(item, Delete):
            values, row = item.key, None
        elif isinstance(item, dict):
            unknown = sorted(set(item) - names)
            if unknown:
                msg = (
                    f"{function.name} emitted columns {unknown} its output does not declare "
                    f"(declared: {function.output.names})"
                )
                raise BatchError(msg)
            values, row = item, {name: item.get(name) for name in function.output.names}
        else:
            msg = f"{function.name} emitted {item!r}: emit dicts or Delete(...)"
            raise BatchError(msg)
        missing = [c for c in function.key if values.get(c) is None]
        if missing:
            msg = f"{function.name} emitted a row without its key columns {missing}: {item!r}"
            raise BatchError(msg)
        okey = tuple(values[c] for c in function.key)
        out.append(Emission(okey, row))
    return out
