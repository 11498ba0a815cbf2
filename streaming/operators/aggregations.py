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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.operators.batch import OFFSET, PARTITION, TIME
from streaming.operators.errors import BatchError, OperatorConfigError


@dataclass(frozen=True)
class Count:
    """The number of records."""


@dataclass(frozen=True)
class Sum:
    """The sum of a numeric column's values."""

    column: str


@dataclass(frozen=True)
class Min:
    """The smallest value of a column."""

    column: str


@dataclass(frozen=True)
class Max:
    """The largest value of a column."""

    column: str


@dataclass(frozen=True)
class Mean:
    """The mean of a numeric column's values, as float64."""

    column: str


@dataclass(frozen=True)
class Latest:
    """The column's value in the record with the greatest (event time, partition, offset)."""

    column: str


Aggregation = Count | Sum | Min | Max | Mean | Latest

_ORDER = ("__latest_time", "__latest_partition", "__latest_offset")
_LAST = pc.ScalarAggregateOptions(skip_nulls=False)


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
        if not isinstance(aggregation, Count | Sum | Min | Max | Mean | Latest):
            msg = (
                f"aggregation {name!r}: {aggregation!r} is not Count, Sum, Min, Max, Mean or Latest"
            )
            raise OperatorConfigError(msg)


def _sum_type(column: pa.DataType, what: str) -> pa.DataType:
    if pa.types.is_integer(column):
        return pa.decimal128(38, 0)
    if pa.types.is_decimal(column):
        return pa.decimal128(38, column.scale)
    if pa.types.is_floating(column):
        return pa.float64()
    msg = f"{what} needs a numeric column, not {column}"
    raise BatchError(msg)


def _column(records: pa.Table, name: str, what: str) -> pa.ChunkedArray:
    if name not in records.column_names:
        msg = f"{what}: the input has no column {name!r} (columns: {records.column_names})"
        raise BatchError(msg)
    return records.column(name)


def record_partials(
    records: pa.Table, aggregations: Mapping[str, Aggregation], keep: Sequence[str]
) -> pa.Table:
    """One partial row per record: the columns ``keep`` plus each aggregation's partial."""
    columns: dict[str, pa.ChunkedArray | pa.Array] = {name: records.column(name) for name in keep}
    n = records.num_rows
    for name, agg in aggregations.items():
        what = f"aggregation {name!r}"
        if isinstance(agg, Count):
            columns[name] = pa.array(np.ones(n, dtype=np.int64))
        elif isinstance(agg, Sum | Mean):
            values = _column(records, agg.column, what)
            summed = values.cast(_sum_type(values.type, what))
            if isinstance(agg, Sum):
                columns[name] = summed
            else:
                columns[f"{name}.sum"] = summed
                columns[f"{name}.n"] = pc.is_valid(values).cast(pa.int64())
        else:
            columns[name] = _column(records, agg.column, what)
    if any(isinstance(agg, Latest) for agg in aggregations.values()):
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
    has_latest = _ORDER[0] in partials.column_names
    if has_latest:
        partials = partials.sort_by([(name, "ascending") for name in _ORDER])
    specs: list[tuple] = []
    names: list[str] = []
    for name, agg in aggregations.items():
        if isinstance(agg, Count | Sum):
            specs.append((name, "sum"))
            names.append(name)
        elif isinstance(agg, Min):
            specs.append((name, "min"))
            names.append(name)
        elif isinstance(agg, Max):
            specs.append((name, "max"))
            names.append(name)
        elif isinstance(agg, Mean):
            specs += [(f"{name}.sum", "sum"), (f"{name}.n", "sum")]
            names += [f"{name}.sum", f"{name}.n"]
        else:
            specs.append((name, "last", _LAST))
            names.append(name)
    if has_latest:
        specs += [(name, "last", _LAST) for name in _ORDER]
        names += list(_ORDER)
    for name, function in (extra or {}).items():
        specs.append((name, function))
        names.append(name)
    # One thread: "last" needs the sorted order, and float sums must add up in the same order
    # in every run of the same batches.
    grouped = partials.group_by(list(group), use_threads=False).aggregate(specs)
    result = {name: grouped.column(name) for name in group}
    for (column, function, *_), name in zip(specs, names, strict=True):
        result[name] = grouped.column(f"{column}_{function}")
    return pa.table(result)


def finals(
    partials: pa.Table, aggregations: Mapping[str, Aggregation], source: pa.Schema
) -> dict[str, pa.ChunkedArray]:
    """The output value of each aggregation from its partial; ``source`` is the input schema.

    Sums of integer columns come out as int64 (an overflow is an error), of decimal(p, s)
    columns as decimal128(38, s), of floats as float64; means as float64.
    """
    out: dict[str, pa.ChunkedArray] = {}
    for name, agg in aggregations.items():
        if isinstance(agg, Sum):
            column = partials.column(name)
            if pa.types.is_integer(source.field(agg.column).type):
                try:
                    column = column.cast(pa.int64())
                except pa.ArrowInvalid as error:
                    msg = f"aggregation {name!r}: the sum overflows int64 ({error})"
                    raise BatchError(msg) from error
            out[name] = column
        elif isinstance(agg, Mean):
            total = partials.column(f"{name}.sum").cast(pa.float64())
            count = partials.column(f"{name}.n")
            divisor = pc.if_else(pc.equal(count, 0), None, count.cast(pa.float64()))
            out[name] = pc.divide(total, divisor)
        else:
            out[name] = partials.column(name)
    return out
