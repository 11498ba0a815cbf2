"""Writing a batch's data files on the executors: each Spark task writes its own share (and
its own dead letters).

The changes never travel to the driver. Each task reduces its rows to the latest change per key,
writes them as one Parquet file into the table (``streaming.delta.data_files``) and returns its
*written share*: the file's entry and the keys, positions and delete flags of its changes, about
30 bytes a change. The driver then commits all shares of the batch in one transaction, so its
memory follows the number of changed keys, not the rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame

from streaming.delta.data_files import ShareWriter, share_schema
from streaming.delta.dead_letters import ENTRY_SCHEMA, DeadLetterFiles


def write_shares(
    changes: DataFrame,
    writer: ShareWriter,
    change_schema: pa.Schema,
    batch_id: int,
    read_version: int | None = None,
) -> pa.Table:
    """Write every task's share of ``changes`` into the table; returns the written shares.

    ``read_version`` is the table version the batch starts from (the rows a kind that reads
    stored rows folds into).
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = share_schema(writer.key_type)

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = [b for b in batches if b.num_rows]
        if not received:
            return
        rows = pa.Table.from_batches(received).select(change_schema.names).cast(change_schema)
        yield from writer.write(rows, batch_id, read_version).to_batches()

    written = changes.mapInArrow(write, from_arrow_schema(schema)).toArrow()
    return written.cast(schema)


def write_dead_letters(dead: DataFrame, files: DeadLetterFiles, batch_id: int) -> pa.Table:
    """Write every task's dead letters (the source's columns plus ``error``) as files of the
    dead-letter table; returns their entries."""
    from pyspark.sql.pandas.types import from_arrow_schema

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = [b for b in batches if b.num_rows]
        if received:  # the file's writer selects and types the columns
            yield from files.write(pa.Table.from_batches(received), batch_id).to_batches()

    written = dead.mapInArrow(write, from_arrow_schema(ENTRY_SCHEMA)).toArrow()
    return written.cast(ENTRY_SCHEMA)
