"""Stateful functions a user writes: a function over per-key state, declared as data.

::

    @stateful(
        by="customer_id",                       # the state is per customer
        key="txn_id",                           # the output table's key
        emits="txn_id string, region string",   # the rows it emits (a value schema)
        state={"regions": MapOf(str, int), "payments": Value(int, default=0)},
    )
    def payment_history(txn, state):
        ...                                      # read and write state.regions, yield rows

    plan = TRANSACTIONS.stream().process(payment_history)

The function gets each record as a dict of its value columns and the key's state
(``streaming.operators.keyed_state.KeyState``: the declared values, maps and lists as
attributes, ``key``, ``time``, ``input``, ``tombstone``, ``timers``) and returns None, a row (a
dict), ``Delete(**key)`` or an iterable of them. A ``timer`` function gets the timer's time and the
state. The platform calls them per key in event-time order and replays a key's records within
grace when an earlier one arrives, so the table is the function's result on every log prefix:
write it as if records came in order, and deterministic (a replay must emit what the first run
did). An output row belongs to one key of ``by``: two keys emitting one output key is an error.
An input whose topic is a changelog (``tombstones="delete"``) is read as its stream of changes:
a tombstone comes at its record timestamp, with its value columns null and ``state.tombstone``
set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from streaming.define.plan import Plan, period_ms, source_of
from streaming.define.value_schema import parse_value_schema
from streaming.errors import DefineError
from streaming.operators import OperatorConfigError, OperatorError
from streaming.operators.keyed_process import KeyedProcess
from streaming.operators.keyed_state import KeyState, StateSpec, check_specs

if TYPE_CHECKING:
    from streaming.define.topic import Topic

Function = Callable[[dict[str, Any], KeyState], Any]
TimerFunction = Callable[[int, KeyState], Any]


def _names(value: str | tuple[str, ...], what: str) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(value)
    if not names or not all(isinstance(n, str) and n for n in names):
        msg = f"{what}: give a column name or a tuple of them"
        raise DefineError(msg)
    return names


def _label(function: Callable[..., Any]) -> str:
    """The function's name, and the plain values it closes over (they shape its output, so
    the fingerprint covers them: ``payment_history(3)`` and ``payment_history(5)`` differ)."""
    module = getattr(function, "__module__", "?")
    label = f"{module}.{getattr(function, '__qualname__', repr(function))}"
    code = getattr(function, "__code__", None)
    cells = getattr(function, "__closure__", None) or ()
    values = []
    for name, cell in zip(code.co_freevars if code else (), cells, strict=False):
        try:
            value = cell.cell_contents
        except ValueError:  # not assigned yet
            continue
        if value is None or isinstance(value, (bool, int, float, str, Decimal)):
            values.append(f"{name}={value!r}")
    return f"{label}[{', '.join(values)}]" if values else label


@dataclass(frozen=True, eq=False)
class Stateful:
    """A stateful function with its declarations (see the module docstring).

    Attributes:
        function: ``(record, state) -> rows``.
        by: the columns the state is kept per (present in every input).
        key: the output table's key columns (among ``emits``).
        emits: the value schema of the rows it emits (``"txn_id string, n bigint"``).
        state: name -> ``Value(type)``, ``MapOf(key_type, type)`` or ``ListOf(type)``, each with
            an optional ``ttl``.
        timer: ``(time, state) -> rows``, called for every timer the function registered.
    """

    function: Function
    by: tuple[str, ...]
    key: tuple[str, ...]
    emits: str
    state: Mapping[str, StateSpec] = field(default_factory=dict)
    timer: TimerFunction | None = None
    output: pa.Schema = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not callable(self.function) or (self.timer is not None and not callable(self.timer)):
            msg = "stateful: function and timer must be functions"
            raise DefineError(msg)
        object.__setattr__(self, "by", _names(self.by, f"{self.name}: by"))
        object.__setattr__(self, "key", _names(self.key, f"{self.name}: key"))
        try:
            fields = parse_value_schema(self.emits)
            check_specs(dict(self.state))
        except (ValueError, OperatorConfigError) as exc:
            raise DefineError(f"{self.name}: {exc}") from None
        names = [f.name for f in fields]
        missing = [c for c in self.key if c not in names]
        if missing:
            msg = f"{self.name}: its key columns {missing} are not among emits ({self.emits})"
            raise DefineError(msg)
        # The table starts with its key; the other columns keep their declared order.
        rank = {name: i for i, name in enumerate(self.key)}
        ordered = sorted(fields, key=lambda f: rank.get(f.name, len(rank)))
        output = pa.schema([(f.name, f.arrow_type) for f in ordered])
        object.__setattr__(self, "output", output)
        object.__setattr__(self, "state", dict(self.state))

    @property
    def name(self) -> str:
        return f"stateful function {_label(self.function)}"

    def process(self, record: dict[str, Any], state: KeyState) -> Any:
        return self.function(record, state)

    def on_timer(self, time: int, state: KeyState) -> Any:
        if self.timer is None:
            msg = f"{self.name} registered a timer but declares no timer function (timer=...)"
            raise DefineError(msg)
        return self.timer(time, state)

    def __repr__(self) -> str:
        timer = None if self.timer is None else _label(self.timer)
        return (
            f"Stateful({_label(self.function)}, by={self.by}, key={self.key}, "
            f"emits={self.emits!r}, state={self.state!r}, timer={timer})"
        )


def stateful(
    *,
    by: str | tuple[str, ...],
    key: str | tuple[str, ...],
    emits: str,
    state: Mapping[str, StateSpec] | None = None,
    timer: TimerFunction | None = None,
) -> Callable[[Function], Stateful]:
    """Declare a stateful function (a decorator; see the module docstring)."""

    def declare(function: Function) -> Stateful:
        return Stateful(function, by, key, emits, dict(state or {}), timer)  # type: ignore[arg-type]

    return declare


def stateful_plan(topics: tuple[Topic, ...], function: Stateful, grace: timedelta) -> Plan:
    """The plan running ``function`` over the records of ``topics`` (``StreamInput.process``)."""
    if not isinstance(function, Stateful):
        msg = (
            f"process takes a stateful function, not {function!r}: declare it with "
            "@stateful(by=..., key=..., emits=...)"
        )
        raise DefineError(msg)
    for topic in topics:
        missing = [c for c in function.by if c not in topic.schema().names]
        if missing:
            msg = (
                f"{function.name}: topic {topic.name!r} has no columns {missing} to keep state "
                f"by; its columns are {topic.schema().names}"
            )
            raise DefineError(msg)
    try:
        operator = KeyedProcess(
            function=function,
            by=function.by,
            sources=tuple(source_of(t) for t in topics),
            grace_ms=period_ms(grace),
        )
    except OperatorError as exc:
        raise DefineError(str(exc)) from None
    plan = Plan(inputs=topics, operator=operator)
    plan.table_schema()
    return plan
