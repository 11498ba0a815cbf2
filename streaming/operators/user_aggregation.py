"""User-defined aggregations: a class with an initial state, ``add``, ``merge`` and ``result``.

::

    class Countries(Aggregator):  # the distinct countries of a group, sorted
        returns = str

        def initial(self):
            return []

        def add(self, state, value):
            return sorted(set(state) | {value}) if value is not None else state

        def merge(self, a, b):
            return sorted(set(a) | set(b))

        def result(self, state):
            return ",".join(state)

    TRANSACTIONS.stream().group_by("customer_id", aggregations={"countries": Countries("country")})

A group's partial is its state as JSON text, so the state the platform keeps (and restores
after a restart) is exactly the one the functions see: declare it from JSON values (None, bool,
int, float, str, lists, dicts with str keys). Batches and out-of-order records reach a group in
any grouping and order, so ``merge`` must be associative and commutative and agree with
``add`` (``merge(add(initial(), x), s)`` is ``add(s, x)``), as for ``Sum``. A declaration that
cannot work is refused when it is made; a function that raises or returns a state that is not
JSON fails its batch, naming the aggregation.
"""

from __future__ import annotations

import json
from functools import reduce
from typing import Any, ClassVar

import pyarrow as pa

from streaming.operators.aggregations import Aggregation, Columns, Combine
from streaming.operators.errors import BatchError, OperatorConfigError

_TYPES: dict[Any, pa.DataType] = {
    int: pa.int64(),
    float: pa.float64(),
    str: pa.string(),
    bool: pa.bool_(),
}
_METHODS = (
    "initial(self)",
    "add(self, state, value)",
    "merge(self, a, b)",
    "result(self, state)",
)


class Aggregator(Aggregation):
    """A user-defined aggregation of one column (see the module docstring).

    A subclass defines ``initial``, ``add``, ``merge`` and ``result`` and sets ``returns``
    (``int``, ``float``, ``str``, ``bool`` or a pyarrow type); an instance names its column:
    ``Countries("country")``. A subclass taking more parameters passes the column on with
    ``super().__init__(column)``; its attributes are part of the plan's fingerprint.
    """

    returns: ClassVar[Any] = None

    def __init__(self, column: str) -> None:
        label = type(self).__qualname__
        missing = [m for m in _METHODS if _inherited(type(self), m.split("(")[0])]
        if missing:
            msg = f"aggregator {label}: define {', '.join(missing)}"
            raise OperatorConfigError(msg)
        if not isinstance(column, str) or not column:
            msg = f"aggregator {label}: give the column it aggregates by name, not {column!r}"
            raise OperatorConfigError(msg)
        self.column = column
        _declared_type(type(self))
        start = self.initial()
        if not _survives_restart(start):
            msg = (
                f"aggregator {label}: initial() gives {start!r}, which a restart would not "
                "restore; make the state of JSON values (None, bool, int, float, str, lists, "
                "dicts with str keys)"
            )
            raise OperatorConfigError(msg)

    # What the user defines.

    def initial(self) -> Any:
        """The state of no values."""
        raise NotImplementedError

    def add(self, state: Any, value: Any) -> Any:
        """The state with one more value of the column (None when it is null)."""
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        """The state of the values of two states together."""
        raise NotImplementedError

    def result(self, state: Any) -> Any:
        """The output value of a group's state."""
        raise NotImplementedError

    # How the platform runs it.

    @property
    def output_type(self) -> pa.DataType:
        return _declared_type(type(self))

    def partials(self, name: str, records: pa.Table) -> Columns:
        if self.column not in records.column_names:
            msg = (
                f"aggregation {name!r}: the input has no column {self.column!r} "
                f"(columns: {records.column_names})"
            )
            raise BatchError(msg)
        values = records.column(self.column).to_pylist()
        states = [self._encode(name, self._call(name, "add", self.initial(), v)) for v in values]
        return {name: pa.array(states, pa.string())}

    def combines(self, name: str) -> list[Combine]:
        return [(name, "list")]

    def settle(self, name: str, combined: Columns) -> None:
        merged = []
        for states in combined[name].to_pylist():
            if len(states) == 1:
                merged.append(states[0])
                continue
            decoded = [json.loads(s) for s in states]
            total = reduce(lambda a, b: self._call(name, "merge", a, b), decoded)
            merged.append(self._encode(name, total))
        combined[name] = pa.array(merged, pa.string())

    def output(self, name: str, partials: pa.Table, source: pa.Schema) -> pa.ChunkedArray:
        states = partials.column(name).to_pylist()
        values = [self._call(name, "result", json.loads(s)) for s in states]
        try:
            return pa.chunked_array([pa.array(values, self.output_type)], self.output_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as error:
            msg = f"aggregation {name!r}: result() gave values that are not {self.output_type}"
            raise BatchError(f"{msg} ({error})") from error

    def _call(self, name: str, method: str, *args: Any) -> Any:
        try:
            return getattr(self, method)(*args)
        except Exception as error:
            shown = ", ".join(repr(a) for a in args)
            msg = f"aggregation {name!r}: {self!r}.{method}({shown}) raised {error!r}"
            raise BatchError(msg) from error

    def _encode(self, name: str, state: Any) -> str:
        if not _survives_restart(state):
            msg = (
                f"aggregation {name!r}: {self!r} made the state {state!r}, which a restart "
                "would not restore; keep it to JSON values"
            )
            raise BatchError(msg)
        return json.dumps(state, separators=(",", ":"))

    def __repr__(self) -> str:
        cls = type(self)
        extra = "".join(f", {k}={v!r}" for k, v in sorted(vars(self).items()) if k != "column")
        return f"{cls.__module__}.{cls.__qualname__}({self.column!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), self.column))


def _declared_type(cls: type[Aggregator]) -> pa.DataType:
    declared = cls.returns
    if isinstance(declared, pa.DataType):
        return declared
    if declared in _TYPES:
        return _TYPES[declared]
    msg = (
        f"aggregator {cls.__qualname__}: set returns = int, float, str, bool or a pyarrow type "
        f"(the output column's type), not {declared!r}"
    )
    raise OperatorConfigError(msg)


def _inherited(cls: type, method: str) -> bool:
    return getattr(cls, method) is getattr(Aggregator, method)


def _survives_restart(state: Any) -> bool:
    """Whether ``state`` comes back equal (and of the same types) from JSON text."""
    try:
        text = json.dumps(state)
    except (TypeError, ValueError):
        return False
    return _same(json.loads(text), state)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b or a != a  # NaN stays NaN
