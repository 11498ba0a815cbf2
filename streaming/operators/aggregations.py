"""Typed aggregations and their partial states, which combine associatively.

Every aggregation keeps a partial per group that two batches' partials merge into exactly the
partial of one pass: counts and sums add (integers and decimals exactly, as decimal128(38, s)),
min and max compare, mean is (sum, count of values), latest is the value of the record with the
greatest (event time, partition, offset). Nulls are skipped as in SQL: sum, min, max and mean of
no values are null; ``Latest`` takes the latest record's value even when it is null. Float sums
and means are float64 and, like any float addition, depend on the grouping only in their last
bits; declare a decimal or integer column for exact money.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.operators.batch import OFFSET, PARTITION, TIME
from streaming.operators.errors import BatchError, OperatorConfigError

Columns = dict[str, pa.Array | pa.ChunkedArray]
# A pyarrow hash aggregate over a partial column: (column, function) or (column, function, options).
Combine = tuple

_ORDER = ("__latest_time", "__latest_partition", "__latest_offset")
_LAST = pc.ScalarAggregateOptions(skip_nulls=False)


class Aggregation(ABC):
    """One aggregation, as three steps over partial columns named after its output ``name``:
    :meth:`partials` gives each record's partial, :meth:`combines` says how the partials of a
    group add up (:meth:`settle` finishes what they give), :meth:`output` turns a group's
    partial into the output value."""

    # Whether adding takes the records' (event time, partition, offset) order into account.
    ordered: ClassVar[bool] = False

    @abstractmethod
    def partials(self, name: str, records: pa.Table) -> Columns:
        """The partial of each record of ``records``."""

    @abstractmethod
    def combines(self, name: str) -> list[Combine]:
        """The hash aggregates that add partials up, one per partial column."""

    def settle(self, name: str, combined: Columns) -> None:  # noqa: B027 (most need nothing)
        """Turn what the hash aggregates gave (``combined``, by partial column) into partials;
        they are partials already unless the aggregation combines in Python."""

    def output(self, name: str, partials: pa.Table, source: pa.Schema) -> pa.ChunkedArray:
        """The output of each group, from its partial (``source``: the input's schema)."""
        return partials.column(name)


@dataclass(frozen=True)
class Count(Aggregation):
    """The number of records."""

    def partials(self, name: str, records: pa.Table) -> Columns:
        return {name: pa.array(np.ones(records.num_rows, dtype=np.int64))}

    def combines(self, name: str) -> list[Combine]:
        return [(name, "sum")]


@dataclass(frozen=True)
class Sum(Aggregation):
    """The sum of a numeric column's values."""

    column: str

    def partials(self, name: str, records: pa.Table) -> Columns:
        values = _column(records, self.column, name)
        return {name: values.cast(_sum_type(values.type, name))}

    def combines(self, name: str) -> list[Combine]:
        return [(name, "sum")]

    def output(self, name: str, partials: pa.Table, source: pa.Schema) -> pa.ChunkedArray:
        column = partials.column(name)
        if not pa.types.is_integer(source.field(self.column).type):
            return column
        try:
            return column.cast(pa.int64())
        except pa.ArrowInvalid as error:
            msg = f"aggregation {name!r}: the sum overflows int64 ({error})"
            raise BatchError(msg) from error


@dataclass(frozen=True)
class Min(Aggregation):
    """The smallest value of a column."""

    column: str

    def partials(self, name: str, records: pa.Table) -> Columns:
        return {name: _column(records, self.column, name)}

    def combines(self, name: str) -> list[Combine]:
        return [(name, "min")]


@dataclass(frozen=True)
class Max(Aggregation):
    """The largest value of a column."""

    column: str

    def partials(self, name: str, records: pa.Table) -> Columns:
        return {name: _column(records, self.column, name)}

    def combines(self, name: str) -> list[Combine]:
        return [(name, "max")]


@dataclass(frozen=True)
class Mean(Aggregation):
    """The mean of a numeric column's values, as float64."""

    column: str

    def partials(self, name: str, records: pa.Table) -> Columns:
        values = _column(records, self.column, name)
        return {
            f"{name}.sum": values.cast(_sum_type(values.type, name)),
            f"{name}.n": pc.is_valid(values).cast(pa.int64()),
        }

    def combines(self, name: str) -> list[Combine]:
        return [(f"{name}.sum", "sum"), (f"{name}.n", "sum")]

    def output(self, name: str, partials: pa.Table, source: pa.Schema) -> pa.ChunkedArray:
        total = partials.column(f"{name}.sum").cast(pa.float64())
        count = partials.column(f"{name}.n")
        divisor = pc.if_else(pc.equal(count, 0), None, count.cast(pa.float64()))
        return pc.divide(total, divisor)


@dataclass(frozen=True)
class Latest(Aggregation):
    """The column's value in the record with the greatest (event time, partition, offset)."""

    column: str
    ordered: ClassVar[bool] = True

    def partials(self, name: str, records: pa.Table) -> Columns:
        return {name: _column(records, self.column, name)}

    def combines(self, name: str) -> list[Combine]:
        return [(name, "last", _LAST)]


def check_aggregations(aggregations: Mapping[str, Aggregation], taken: Sequence[str]) -> None:
    """Reject empty, reserved or clashing output names and unknown aggregation objects."""
    if not aggregations:
        msg = "declare at least one aggregation, e.g. {'count': Count()}"
        raise OperatorConfigError(msg)
    for name, aggregation in aggregations.items():
        if not name or name.startswith("_") or "." in name:
            msg = f"aggregation output {name!r}: use a name not starting with '_' and without '.'"
            raise OperatorConfigError(msg)
        if name in taken:
            msg = f"aggregation output {name!r} clashes with a key or window column"
            raise OperatorConfigError(msg)
        if not isinstance(aggregation, Aggregation):
            msg = (
                f"aggregation {name!r}: {aggregation!r} is not Count, Sum, Min, Max, Mean, Latest "
                "or an Aggregator"
            )
            raise OperatorConfigError(msg)


def _sum_type(column: pa.DataType, name: str) -> pa.DataType:
    if pa.types.is_integer(column):
        return pa.decimal128(38, 0)
    if pa.types.is_decimal(column):
        return pa.decimal128(38, column.scale)
    if pa.types.is_floating(column):
        return pa.float64()
    msg = f"aggregation {name!r} needs a numeric column, not {column}"
    raise BatchError(msg)


def _column(records: pa.Table, column: str, name: str) -> pa.ChunkedArray:
    if column not in records.column_names:
        msg = (
            f"aggregation {name!r}: the input has no column {column!r} "
            f"(columns: {records.column_names})"
        )
        raise BatchError(msg)
    return records.column(column)


def record_partials(
    records: pa.Table, aggregations: Mapping[str, Aggregation], keep: Sequence[str]
) -> pa.Table:
    """One partial row per record: the columns ``keep`` plus each aggregation's partial."""
    columns: Columns = {name: records.column(name) for name in keep}
    for name, aggregation in aggregations.items():
        columns.update(aggregation.partials(name, records))
    if any(aggregation.ordered for aggregation in aggregations.values()):
        columns[_ORDER[0]] = records.column(TIME)
        columns[_ORDER[1]] = records.column(PARTITION)
        columns[_ORDER[2]] = records.column(OFFSET)
    return pa.table(columns)


def merge_partials(
    partials: pa.Table,
    group: Sequence[str],
    aggregations: Mapping[str, Aggregation],
    extra: Mapping[str, str] | None = None,
) -> pa.Table:
    """Combine partial rows per ``group`` into one partial row each.

    ``extra`` maps further columns to the pyarrow hash aggregate that combines them (e.g.
    ``{"window_end": "max"}``).
    """
    ordered = _ORDER[0] in partials.column_names
    if ordered:
        partials = partials.sort_by([(name, "ascending") for name in _ORDER])
    specs: list[Combine] = []
    for name, aggregation in aggregations.items():
        specs += aggregation.combines(name)
    if ordered:
        specs += [(name, "last", _LAST) for name in _ORDER]
    specs += list((extra or {}).items())
    # One thread: "last" needs the sorted order, and float sums must add up in the same order
    # in every run of the same batches.
    grouped = partials.group_by(list(group), use_threads=False).aggregate(specs)
    result = {name: grouped.column(name) for name in group}
    for column, function, *_ in specs:
        result[column] = grouped.column(f"{column}_{function}")
    for name, aggregation in aggregations.items():
        aggregation.settle(name, result)
    return pa.table(result)


def finals(
    partials: pa.Table, aggregations: Mapping[str, Aggregation], source: pa.Schema
) -> dict[str, pa.ChunkedArray]:
    """The output value of each aggregation from its partial; ``source`` is the input schema.

    Sums of integer columns come out as int64 (an overflow is an error), of decimal(p, s)
    columns as decimal128(38, s), of floats as float64; means as float64.
    """
    return {name: agg.output(name, partials, source) for name, agg in aggregations.items()}
