"""Writing one share of a batch's changes as a data file, wherever the share is (driver or task).

A *share* is the part of one micro-batch's changes that one writer holds: a Spark task's rows on
an executor, or a whole batch on the driver. The writer reduces its share to one change per key
(the table kind's ``reduce``; a kind that reads stored rows first folds each change into
its key's stored row, read from :mod:`streaming.delta.stored_rows` at the table version the batch
starts from), writes the surviving rows (not the deletes) as one Parquet file into the table,
and returns a *written share*: the file's entry and, per reduced change, its key (one value, also
for a composite key: ``streaming.delta.table_keys``), source position, whether it deletes, and
its row in the file. That is all the committing side needs: it never sees the rows.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streaming.define.table_kinds import TableKind
from streaming.delta.stored_rows import stored_rows
from streaming.delta.table_keys import key_array, key_type
from streaming.delta.table_store import TableLocation, TableStore
from streaming.errors import TableError


def share_schema(key_type: pa.DataType) -> pa.Schema:
    """One written share: a file (or none, if every change deleted) and its reduced changes."""
    return pa.schema(
        [
            ("path", pa.string()),
            ("size", pa.int64()),
            ("modification_time", pa.int64()),
            ("num_records", pa.int64()),
            ("stats", pa.string()),
            ("keys", pa.list_(key_type)),
            ("partitions", pa.list_(pa.int32())),
            ("offsets", pa.list_(pa.int64())),
            ("deletes", pa.list_(pa.bool_())),
            ("rows", pa.list_(pa.int32())),  # the change's row in the file, -1 for a delete
        ]
    )


@dataclass(frozen=True)
class ShareWriter:
    """Writes shares of one table; small and picklable, so Spark ships it to the tasks."""

    location: TableLocation
    schema: pa.Schema
    kind: TableKind

    @property
    def key_type(self) -> pa.DataType:
        return key_type(self.schema, self.kind.keys)

    def write(self, changes: pa.Table, batch_id: int, read_version: int | None = None) -> pa.Table:
        """Write one share of batch ``batch_id``; returns it as one row of :func:`share_schema`.

        ``changes`` holds the table's columns and ``_delete``, and either the source position
        of each change (``_partition``, ``_offset``: the share is reduced to the latest change
        per key) or none (an operator's output: at most one change per key, each replacing its
        key's row). A kind that reads stored rows (``Accumulate``) takes the table's columns only
        and folds them into the rows stored at ``read_version``, the version the batch starts
        from.
        """
        if self.kind.reads_stored_rows:
            changes = self._folded(changes, read_version)
        reduced = self.kind.reduce(_positioned(changes, self.kind))
        self._check_positions(reduced)
        keep = pc.invert(reduced["_delete"].combine_chunks())
        rows = reduced.filter(keep).select(self.schema.names).cast(self.schema)
        row_numbers = pc.subtract(pc.cumulative_sum(pc.cast(keep, pa.int32())), 1)
        row_numbers = pc.if_else(keep, row_numbers, -1)
        entry = {"path": None, "size": 0, "modification_time": 0, "num_records": 0, "stats": None}
        if rows.num_rows:
            entry = self._write_file(rows, batch_id)
        schema = share_schema(self.key_type)
        lists = {
            "keys": key_array(reduced, self.kind.keys),
            "partitions": reduced["_partition"],
            "offsets": reduced["_offset"],
            "deletes": reduced["_delete"],
            "rows": row_numbers,
        }
        columns = {name: pa.array([v], schema.field(name).type) for name, v in entry.items()}
        for name, values in lists.items():
            flat = pa.chunked_array([values]).combine_chunks()
            flat = flat.cast(schema.field(name).type.value_type)
            columns[name] = pa.ListArray.from_arrays(pa.array([0, len(flat)], pa.int32()), flat)
        return pa.table(columns, schema=schema)

    def _folded(self, changes: pa.Table, read_version: int | None) -> pa.Table:
        """The batch rows folded into their keys' stored rows, as deletes-free changes."""
        if read_version is None:
            msg = f"{type(self.kind).__name__} folds into the stored rows: give the read_version"
            raise TableError(msg)
        rows = changes.select(self.schema.names).cast(self.schema)
        keys = key_array(rows, self.kind.keys)
        stored, matched = stored_rows(self.location, self.schema, self.kind, read_version).get(keys)
        folded = self.kind.fold(rows, stored, matched)
        return folded.append_column("_delete", pa.array([False] * folded.num_rows))

    def _write_file(self, rows: pa.Table, batch_id: int) -> dict[str, object]:
        name = f"part-{batch_id:010d}-{uuid.uuid4().hex}.parquet"
        sink = pa.BufferOutputStream()
        pq.write_table(rows, sink, compression="snappy")
        data = sink.getvalue()
        TableStore(self.location).write(name, data.to_pybytes())
        return {
            "path": name,
            "size": data.size,
            "modification_time": int(time.time() * 1000),
            "num_records": rows.num_rows,
            "stats": file_stats(rows),
        }

    def _check_positions(self, reduced: pa.Table) -> None:
        """The position columns must hold each row's source position: the sink keeps them as
        the stored row's position, and a rebuilt index reads them back."""
        if not self.kind.position or reduced.num_rows == 0:
            return
        part, offset = self.kind.position
        partitions = pc.cast(reduced[part], pa.int64())
        same = pc.and_(
            pc.equal(partitions, pc.cast(reduced["_partition"], pa.int64())),
            pc.equal(reduced[offset], reduced["_offset"]),
        )
        deletes = reduced["_delete"]
        if not pc.all(pc.or_(same, deletes)).as_py():
            msg = (
                f"the position columns {part!r} and {offset!r} of a LatestPerKey table must hold "
                "each row's _partition and _offset; make the transform copy them"
            )
            raise TableError(msg)


def _positioned(changes: pa.Table, kind: TableKind) -> pa.Table:
    """``changes`` with position columns: as given, or zeros for changes without a position."""
    if "_partition" in changes.column_names and "_offset" in changes.column_names:
        return changes
    if kind.position:
        msg = (
            f"a table that keeps source positions ({', '.join(kind.position)}) needs each "
            "change's _partition and _offset"
        )
        raise TableError(msg)
    keys = key_array(changes, kind.keys)
    if pc.count_distinct(keys, mode="all").as_py() != changes.num_rows:
        raise TableError(duplicate_key_message(kind))
    zeros = pa.array([0] * changes.num_rows, pa.int64())
    return changes.append_column("_partition", zeros.cast(pa.int32())).append_column(
        "_offset", zeros
    )


def duplicate_key_message(kind: TableKind) -> str:
    key = ", ".join(kind.keys)
    return (
        f"changes without _partition/_offset must hold at most one change per key ({key}) in a "
        "batch: nothing says which of two would be the latest. For a stateful plan, each output "
        "key must come from one input partition: key the output by a column the input's Kafka "
        "key determines, or repartition the input by it first"
    )


def file_stats(rows: pa.Table) -> str:
    """Delta statistics of a new file: row and null counts, bounds of integer and string columns.

    Bounds are left out for other types, which only costs readers data skipping.
    """
    mins, maxs, nulls = {}, {}, {}
    for name in rows.column_names:
        column = rows[name]
        nulls[name] = column.null_count
        if pa.types.is_integer(column.type) or pa.types.is_string(column.type):
            bounds = pc.min_max(column)
            if bounds["min"].is_valid:
                mins[name], maxs[name] = bounds["min"].as_py(), bounds["max"].as_py()
    stats = {"numRecords": rows.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return json.dumps(stats, separators=(",", ":"))
