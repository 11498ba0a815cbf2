"""The input contract: what a micro-batch hands an operator.

Per input, a pyarrow Table of the batch's records with the metadata columns ``_partition``,
``_offset``, ``_timestamp`` (the record timestamp, epoch ms) and, for a changelog input,
``_delete`` (a tombstone), next to the decoded key and value columns (null in a tombstone). Rows
may come in any order. ``ends`` is the prefix the batch completes: per input, every partition's
end offset (exclusive), including partitions without records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.operators.errors import BatchError, OperatorConfigError

PARTITION = "_partition"
OFFSET = "_offset"
TIMESTAMP = "_timestamp"
DELETE = "_delete"
TIME = "_time"
"""The event time the engine derives for every record (epoch ms)."""

RECORD = (PARTITION, OFFSET)
"""A record's identity within an input."""

ORDER = (TIME, PARTITION, OFFSET)
"""The order of records by event time: ties broken by the higher (partition, offset)."""


@dataclass(frozen=True)
class Source:
    """One input of an operator.

    Attributes:
        name: the input's name in ``Batch.records``.
        time: the value column holding the event time (int64 epoch ms or a timestamp); None
            takes the record timestamp. A tombstone's event time is its record timestamp.
        changelog: the input is read as a table: ``_delete`` marks tombstones.
    """

    name: str
    time: str | None = None
    changelog: bool = False

    def __post_init__(self) -> None:
        if not self.name:
            msg = "a source needs a name"
            raise OperatorConfigError(msg)
        if self.time is not None and self.time.startswith("_"):
            msg = f"event-time column {self.time!r}: names starting with '_' are reserved"
            raise OperatorConfigError(msg)


@dataclass(frozen=True)
class Batch:
    """One micro-batch: records per input, and the prefix (end offsets) it completes."""

    records: Mapping[str, pa.Table]
    ends: Mapping[str, Mapping[int, int]]


def value_columns(table: pa.Table) -> list[str]:
    """The user columns of a records table (every column not starting with '_')."""
    return [name for name in table.column_names if not name.startswith("_")]


def _require(table: pa.Table, source: Source, names: list[str]) -> None:
    missing = [name for name in names if name not in table.column_names]
    if missing:
        msg = f"input {source.name!r}: the batch lacks the columns {missing}"
        raise BatchError(msg)


def _as_epoch_ms(column: pa.ChunkedArray, what: str) -> pa.ChunkedArray:
    if pa.types.is_timestamp(column.type):
        return column.cast(pa.timestamp("ms")).cast(pa.int64())
    if pa.types.is_integer(column.type):
        return column.cast(pa.int64())
    msg = f"{what} must be an integer (epoch ms) or a timestamp, not {column.type}"
    raise BatchError(msg)


def prepare(batch: Batch, source: Source) -> pa.Table:
    """The input's records sorted by (partition, offset), with the event time in ``_time``.

    Raises:
        BatchError: the records table is missing, lacks a metadata or event-time column, has a
            record with no event time, a repeated offset, or a partition or offset outside
            ``ends``.
    """
    if source.name not in batch.records:
        msg = f"the batch has no records table for input {source.name!r} (pass an empty one)"
        raise BatchError(msg)
    table = batch.records[source.name]
    needed = [PARTITION, OFFSET, TIMESTAMP]
    if source.changelog:
        needed.append(DELETE)
    if source.time is not None:
        needed.append(source.time)
    _require(table, source, needed)
    order = pc.sort_indices(table, sort_keys=[(PARTITION, "ascending"), (OFFSET, "ascending")])
    table = table.take(order)
    partitions = table.column(PARTITION).cast(pa.int32())
    offsets = table.column(OFFSET).cast(pa.int64())
    stamp = _as_epoch_ms(table.column(TIMESTAMP), f"input {source.name!r}: {TIMESTAMP}")
    if source.time is None:
        event_time = stamp
    else:
        event_time = _as_epoch_ms(
            table.column(source.time), f"input {source.name!r}: event-time column {source.time}"
        )
        if source.changelog:
            event_time = pc.if_else(table.column(DELETE), stamp, event_time)
    if event_time.null_count:
        row = pc.index(pc.is_null(event_time), True).as_py()
        msg = (
            f"input {source.name!r}: the record at partition {partitions[row]} offset "
            f"{offsets[row]} has no event time"
        )
        raise BatchError(msg)
    table = table.set_column(table.schema.get_field_index(PARTITION), PARTITION, partitions)
    table = table.set_column(table.schema.get_field_index(OFFSET), OFFSET, offsets)
    if TIME in table.column_names:
        table = table.drop_columns([TIME])
    table = table.append_column(TIME, event_time)
    _check_offsets(table, source, batch.ends.get(source.name, {}))
    return table


def _check_offsets(table: pa.Table, source: Source, ends: Mapping[int, int]) -> None:
    if table.num_rows == 0:
        return
    partitions = table.column(PARTITION).to_numpy()
    offsets = table.column(OFFSET).to_numpy()
    repeated = (partitions[1:] == partitions[:-1]) & (offsets[1:] == offsets[:-1])
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        msg = (
            f"input {source.name!r}: partition {partitions[row]} offset {offsets[row]} "
            "occurs twice in the batch"
        )
        raise BatchError(msg)
    for partition in np.unique(partitions):
        if int(partition) not in ends:
            msg = (
                f"input {source.name!r}: records of partition {partition} but the batch's "
                f"ends do not list it (ends list {sorted(ends)})"
            )
            raise BatchError(msg)
        last = offsets[partitions == partition].max()
        if last >= ends[int(partition)]:
            msg = (
                f"input {source.name!r}: partition {partition} has offset {last}, at or past "
                f"the batch's end offset {ends[int(partition)]}"
            )
            raise BatchError(msg)
