"""Reading compacted tables: consistent snapshots, and which input offsets a version reflects.

A Delta version is an immutable snapshot, so every read here is consistent even while the
pipeline keeps committing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from deltalake import DeltaTable

from streaming import offsets as off
from streaming.compacted_table import BATCH_ID, END_OFFSETS, FINGERPRINT

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession


class TableNotFoundError(FileNotFoundError):
    pass


@dataclass(frozen=True)
class Commit:
    """One batch commit of a compacted table."""

    table_version: int
    batch_id: int
    end_offsets: off.OffsetMap
    timestamp_ms: int
    fingerprint: str = ""


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


def commits(path: Path | str) -> list[Commit]:
    """Every batch commit, oldest first, with the input offsets it reflects."""
    history = open_table(path).history()
    found = []
    for entry in history:
        if BATCH_ID in entry and END_OFFSETS in entry:
            found.append(
                Commit(
                    table_version=int(entry["version"]),
                    batch_id=int(entry[BATCH_ID]),
                    end_offsets=off.from_spark(json.loads(entry[END_OFFSETS])),
                    timestamp_ms=int(entry.get("timestamp", 0)),
                    fingerprint=str(entry.get(FINGERPRINT, "")),
                )
            )
    return sorted(found, key=lambda c: c.table_version)


def last_end_offsets(path: Path | str) -> off.OffsetMap | None:
    if not DeltaTable.is_deltatable(str(path)):
        return None
    found = commits(path)
    return found[-1].end_offsets if found else None


def recorded_fingerprint(path: Path | str) -> str | None:
    """The pipeline fingerprint of the table's last commit, if any."""
    if not DeltaTable.is_deltatable(str(path)):
        return None
    found = commits(path)
    return found[-1].fingerprint or None if found else None
