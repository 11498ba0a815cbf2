"""One micro-batch of a pipeline declared with a per-batch Spark DataFrame transform (the
deprecated authoring form, kept working): the records are decoded, the transform's changes are
written on the executors as shares of the table, or gathered here for a table kind that takes
no shares, and the dead letters are written as files of the dead-letter table."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from streaming.define.pipeline import Pipeline
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.dead_letters import DeadLetters
from streaming.kafka.decode import BatchSplitter
from streaming.run.batch_engine import Written
from streaming.run.executor_writes import write_dead_letters, write_shares


class TransformBatch:
    """Runs one deployment's transform, one micro-batch at a time."""

    def __init__(
        self, pipeline: Pipeline, table: CompactedTable, dead_letters: DeadLetters
    ) -> None:
        assert pipeline.transform is not None
        self.transform = pipeline.transform
        self.splitter = BatchSplitter(pipeline)
        self.table = table
        self.dead_letters = dead_letters
        self.change_schema = pipeline.table.change_schema(pipeline.table_schema)

    def write(
        self, batch: DataFrame, batch_id: int, ends: dict[str, Any], committed: int | None
    ) -> Written:
        # One Spark job (one stage) reads the source once, writes or returns the changes and
        # counts the records; a second one writes dead letters, only when there are any.
        decoded = self.splitter.split(batch)
        changes = self.transform(decoded.good)
        shares = arrow = None
        if self.table.writes_shares:
            writer, version = self.table.share_writer(), self.table.version()
            shares = write_shares(changes, writer, self.change_schema, batch_id, version)
        else:
            arrow = changes.toArrow().select(self.change_schema.names).cast(self.change_schema)
        input_rows, dead_rows = decoded.counts()
        dead = None
        if dead_rows:
            dead = write_dead_letters(decoded.dead, self.dead_letters.files, batch_id)
        return Written(input_rows, dead, shares=shares, changes=arrow)

    def committed(self, batch_id: int, written: Written) -> None:
        """Nothing to follow: the transform keeps no state."""

    def close(self) -> None:
        """Nothing held."""
