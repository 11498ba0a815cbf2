"""Reading compacted tables: consistent snapshots, and which input offsets a version reflects.

A Delta version is an immutable snapshot, so every read here is consistent even while the
pipeline keeps committing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from deltalake import DeltaTable

from streaming.delta.commit_info import Commit, parse_commit
from streaming.errors import TableNotFoundError
from streaming.kafka import offsets as off

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession


def open_table(path: Path | str, version: int | None = None) -> DeltaTable:
    if not DeltaTable.is_deltatable(str(path)):
        msg = f"no table at {path}; run its pipeline first (kappa run NAME --until-caught-up)"
        raise TableNotFoundError(msg)
    return DeltaTable(str(path), version=version)


def read_arrow(path: Path | str, version: int | None = None) -> pa.Table:
    return open_table(path, version).to_pyarrow_table()


def read_pandas(path: Path | str, version: int | None = None) -> pd.DataFrame:
    return read_arrow(path, version).to_pandas()


def read_spark(spark: SparkSession, path: Path | str, version: int | None = None) -> DataFrame:
    """The snapshot as a Spark DataFrame, through its file list (no Delta jars needed).

    Reading the directory would be wrong: it holds files that merges have removed.
    """
    dt = open_table(path, version)
    files = dt.file_uris()
    if not files:
        return spark.createDataFrame(dt.to_pyarrow_table())
    return spark.read.parquet(*files)


RECENT_ENTRIES = 20  # log entries read first when only the latest commit is wanted


def commits(path: Path | str) -> list[Commit]:
    """Every batch commit, oldest first, with the input offsets it reflects."""
    found = (parse_commit(e) for e in open_table(path).history())
    return sorted((c for c in found if c is not None), key=lambda c: c.table_version)


def latest_commit(path: Path | str) -> Commit | None:
    """The table's latest batch commit, or None (no table, or no batch committed yet)."""
    if not DeltaTable.is_deltatable(str(path)):
        return None
    return latest_commit_of(DeltaTable(str(path)))


def latest_commit_of(table: DeltaTable) -> Commit | None:
    """The latest batch commit of an open table (for callers that keep the table open).

    Reads only the newest log entries: the whole history only when none of those is a batch.
    """
    recent = table.history(limit=RECENT_ENTRIES)
    newest = _newest(recent)
    if newest is None and len(recent) == RECENT_ENTRIES:  # a long run of non-batch entries
        newest = _newest(table.history())
    return newest


def last_end_offsets(path: Path | str) -> off.OffsetMap | None:
    commit = latest_commit(path)
    return commit.end_offsets if commit else None


def _newest(entries: list[dict[str, Any]]) -> Commit | None:
    """The first batch commit among log entries listed newest first."""
    return next((c for c in map(parse_commit, entries) if c is not None), None)
