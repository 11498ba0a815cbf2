"""Reading compacted tables: consistent snapshots, and which input offsets a version reflects.

A Delta version is an immutable snapshot, so every read here is consistent even while the
pipeline keeps committing. Upsert/delete tables carry deletion vectors: every reader here
applies them (delta-rs' DataFusion reader for Arrow; for Spark, which has no Delta reader without
jars, the file list minus the deleted (file, row) pairs). ``DeltaTable.to_pyarrow_table`` refuses
such tables, and a plain ``spark.read.parquet`` of the file list would bring deleted rows back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from streaming.delta.commit_info import Commit, parse_commit
from streaming.delta.table_store import TableLocation
from streaming.errors import TableError, TableNotFoundError
from streaming.kafka import offsets as off

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


Where = TableLocation | Path | str


def open_table(where: Where, version: int | None = None) -> DeltaTable:
    location = TableLocation.of(where)
    options = location.delta_options()
    if not DeltaTable.is_deltatable(str(location), storage_options=options):
        msg = f"no table at {location}; run its pipeline first (kappa run NAME --until-caught-up)"
        raise TableNotFoundError(msg)
    return DeltaTable(str(location), version=version, storage_options=options)


def read_arrow(
    where: Where, version: int | None = None, columns: list[str] | None = None
) -> pa.Table:
    """The snapshot's rows (deletion vectors applied), with the table's schema."""
    return _rows(open_table(where, version), columns)


def stored_rows(table: DeltaTable) -> int | None:
    """Rows in the snapshot's data files, from the log's file statistics: its live rows plus
    those deletion vectors delete, so an upper bound of what reading it holds in memory. None
    when a file was written without statistics."""
    counts = pa.table(table.get_add_actions(flatten=True)).column("num_records")
    if counts.null_count:
        return None
    return int(sum(counts.to_pylist()))


def _rows(table: DeltaTable, columns: list[str] | None = None) -> pa.Table:
    schema = pa.schema(table.schema())
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    select = ", ".join(f'"{name}"' for name in schema.names)
    reader = QueryBuilder().register("t", table).execute(f"SELECT {select} FROM t")
    return pa.table(reader.read_all()).cast(schema)


def read_spark(spark: SparkSession, where: Where, version: int | None = None) -> DataFrame:
    """The snapshot as a Spark DataFrame, without Delta jars.

    On a file system Spark reads the snapshot's file list itself and drops the rows deletion
    vectors delete with a broadcast anti-join on (file name, row index). Reading the directory
    would be wrong (it holds removed files), and so would the file list alone. Spark here has no
    S3 connector, so a table on S3 is read with delta-rs on the driver.
    """
    location = TableLocation.of(where)
    table = open_table(location, version)
    files = table.file_uris()
    if not files or not location.is_local:
        return spark.createDataFrame(_rows(table))
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    frame = spark.read.schema(from_arrow_schema(pa.schema(table.schema()))).parquet(*files)
    gone = deleted_rows(table)
    if gone.num_rows == 0:
        return frame
    tagged = frame.select(
        "*",
        F.col("_metadata.file_name").alias(_FILE),
        F.col("_metadata.row_index").alias(_ROW),
    )
    kept = tagged.join(F.broadcast(spark.createDataFrame(gone)), [_FILE, _ROW], "left_anti")
    return kept.select(*frame.columns)


_FILE, _ROW = "_kappa_dv_file", "_kappa_dv_row"


def deleted_rows(table: DeltaTable) -> pa.Table:
    """(file name, row) of every row a live file's deletion vector deletes.

    Files are matched by name: data file names carry a UUID, so they are unique in a table,
    while full paths are spelled differently by delta-rs and Spark (``file:///`` and ``file:/``).
    """
    names, rows = [], []
    for batch in table.deletion_vectors():
        batch = pa.record_batch(batch)
        masks = batch["selection_vector"]
        bounds = masks.offsets.to_numpy()
        keep = masks.values.to_numpy(zero_copy_only=False)
        for i, uri in enumerate(batch["filepath"].to_pylist()):
            gone = np.flatnonzero(~keep[bounds[i] : bounds[i + 1]])
            names.append(np.full(len(gone), uri.rsplit("/", 1)[-1], dtype=object))
            rows.append(gone.astype(np.int64))
    if not rows:
        return pa.table({_FILE: pa.array([], pa.string()), _ROW: pa.array([], pa.int64())})
    return pa.table({_FILE: np.concatenate(names), _ROW: np.concatenate(rows)})


RECENT_ENTRIES = 20  # log entries read first when only the latest commit is wanted


def commits(where: Where) -> list[Commit]:
    """Every batch commit, oldest first, with the input offsets it reflects."""
    found = (parse_commit(e) for e in _history(open_table(where)))
    return sorted((c for c in found if c is not None), key=lambda c: c.table_version)


def recent_commits(table: DeltaTable, entries: int | None = None) -> list[Commit]:
    """The batch commits among the table's newest ``entries`` log entries (every entry with
    None), newest first; ``table`` is brought up to date."""
    return [c for c in map(parse_commit, _history(table, entries)) if c is not None]


HISTORY_ATTEMPTS = 20


def _history(table: DeltaTable, limit: int | None = None) -> list[dict[str, Any]]:
    """The table's log entries, newest first, each with its true ``version``; ``table`` is
    brought up to date.

    delta-rs lists every entry in storage but numbers them down from the version the table
    object was loaded at, so an entry committed after the load shifts every number (a reader
    would pair one commit's offsets with the previous commit's table version). A listing is
    kept only when the table's newest version is the same before and after it.
    """
    for _ in range(HISTORY_ATTEMPTS):
        loaded = table.version()
        entries = table.history(limit)
        table.update_incremental()
        if table.version() == loaded:
            return entries
    msg = f"{table.table_uri}: new commits kept landing while its history was read"
    raise TableError(msg)


def latest_commit(where: Where) -> Commit | None:
    """The table's latest batch commit, or None (no table, or no batch committed yet)."""
    location = TableLocation.of(where)
    options = location.delta_options()
    if not DeltaTable.is_deltatable(str(location), storage_options=options):
        return None
    return latest_commit_of(DeltaTable(str(location), storage_options=options))


def latest_commit_of(table: DeltaTable) -> Commit | None:
    """The latest batch commit of an open table (for callers that keep the table open).

    Reads only the newest log entries: the whole history only when none of those is a batch.
    """
    recent = _history(table, RECENT_ENTRIES)
    newest = _newest(recent)
    if newest is None and len(recent) == RECENT_ENTRIES:  # a long run of non-batch entries
        newest = _newest(_history(table))
    return newest


def last_end_offsets(where: Where) -> off.OffsetMap | None:
    commit = latest_commit(where)
    return commit.end_offsets if commit else None


def _newest(entries: list[dict[str, Any]]) -> Commit | None:
    """The first batch commit among log entries listed newest first."""
    return next((c for c in map(parse_commit, entries) if c is not None), None)
