"""A Kafka source for Spark Structured Streaming, as a PySpark Python Data Source.

It speaks Kafka through confluent-kafka and keeps the built-in source's schema and option
names, so a pipeline can switch to ``format("kafka")``::

    spark.dataSource.register(KafkaDataSource)
    spark.readStream.format("kappa_kafka")
        .option("kafka.bootstrap.servers", "127.0.0.1:9092")
        .option("subscribe", "customers,transactions")
        .option("startingOffsets", "earliest")          # latest | earliest | JSON
        .option("maxOffsetsPerTrigger", "100000")
        .load()

Options: ``subscribe`` (comma-separated topics), ``startingOffsets``, ``endingOffsets`` (JSON; a
kappa extension that stops a stream at exact offsets), ``maxOffsetsPerTrigger``,
``maxPartitions`` and ``minPartitionRecords`` (kappa extensions: pack the partition ranges of a
micro-batch into at most that many Spark tasks, each reading at least that many records where
possible; by default one task per Kafka partition, as Spark's source does),
``endingOffsetsFile`` (a kappa extension:
a JSON file of offsets re-read every trigger, which a
side-by-side version uses to cut its batches where the live version cut its commits),
``cutLog``, ``cutIntervalMs`` and ``cutRetentionMs`` (kappa extensions: the platform's log of
shared cut points, ``streaming.kafka.cuts``; each batch ends at the newest cut in its range, and
the source takes a new cut when the newest is older than the interval), ``failOnDataLoss``
(default true), ``includeHeaders`` (default false) and any ``kafka.*`` setting, passed to
librdkafka without the prefix. Records are read ``read_committed``: a range ends at most at the
partition's last stable offset, and aborted transactions are skipped.

Decoding (a kappa extension): with ``valueSchema`` (a DDL such as ``"id string, ts bigint"``, see
``streaming.define.value_schema``), optional ``requiredFields`` (comma-separated) and
``acceptTombstones`` (default true), the source also decodes each JSON value where it reads it
(``streaming.kafka.value_decoder``) and adds the columns ``_value`` (a struct of the declared
fields), ``_tombstone`` and ``error`` (why the record cannot be used, or null). ``value`` then
keeps the raw bytes only of records with an error (the ones a dead-letter table needs).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from streaming.define.value_schema import arrow_struct
from streaming.kafka import offsets as off
from streaming.kafka.cuts import CutLog, batch_end
from streaming.kafka.log import KafkaLog, topic_partitions_or_error
from streaming.kafka.reader import read_ranges
from streaming.kafka.source_options import SourceOptions
from streaming.kafka.value_decoder import ValueDecoder

FORMAT = "kappa_kafka"


class KafkaDataSource(DataSource):
    """``spark.readStream.format("kappa_kafka")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SourceOptions.parse(dict(self.options)).spark_schema()

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(SourceOptions.parse(dict(self.options)))


class KafkaRangePartition(InputPartition):
    """The partition ranges one Spark task reads, one after the other."""

    def __init__(self, ranges: tuple[off.PartitionRange, ...]) -> None:
        super().__init__(ranges)
        self.ranges = ranges


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans exact ``[start, end)`` ranges per partition; reads them in Spark tasks."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._log: KafkaLog | None = None
        self._target: off.OffsetMap | None = None
        self._last_latest: off.OffsetMap | None = None
        self._cut_log: CutLog | None = None

    # --- driver side -----------------------------------------------------------------------
    def _kafka(self) -> KafkaLog:
        if self._log is None:
            self._log = KafkaLog(self.options.client)
        return self._log

    def initialOffset(self) -> dict:
        topic_partitions_or_error(self._kafka(), list(self.options.topics))
        earliest, latest = self._kafka().bounds(self.options.topics)
        return off.to_spark(off.resolve_start(self.options.starting, earliest, latest))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def _cuts(self) -> CutLog | None:
        if self._cut_log is None and self.options.cut_log is not None:
            self._cut_log = CutLog(Path(self.options.cut_log), self.options.cut_retention_ms)
        return self._cut_log

    def _take_cut(self, min_age_ms: int, wait: bool) -> off.OffsetMap | None:
        """A cut of the log (a new one unless the newest is younger than ``min_age_ms``), on
        this source's topics; None without a cut log, or while another process takes one."""
        cuts = self._cuts()
        if cuts is None:
            return None
        cut = cuts.take(self.options.topics, self._kafka().latest, min_age_ms, wait)
        if cut is None:
            return None
        return {t: dict(cut.offsets.get(t, {})) for t in self.options.topics}

    def prepareForTriggerAvailableNow(self) -> None:
        # The run ends at a cut taken now (the log's ends), so its last commit is at a cut.
        cut = self._take_cut(min_age_ms=0, wait=True)
        self._target = cut if cut is not None else self._kafka().latest(self.options.topics)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        position = off.from_spark(start)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        # Before the bounds, so the ends listed next are at or past any cut taken here.
        self._take_cut(min_age_ms=self.options.cut_interval_ms, wait=False)
        earliest, latest = self._kafka().bounds(self.options.topics)
        if self.options.fail_on_data_loss:
            off.check_no_data_loss(position, earliest, latest)
        position = off.add_new_partitions(position, earliest)
        self._last_latest = log_end = latest
        if self._target is not None:
            latest = _min_offsets(latest, self._target, position)
        if self.options.ending is not None:
            latest = _min_offsets(latest, self.options.ending, position)
        if self.options.ending_file is not None:
            cap = read_offsets_cap(self.options.ending_file)
            if cap is not None:
                latest = _min_offsets(latest, cap, position)
        cuts = self._cuts()
        if cuts is not None:
            at_cut = batch_end(position, latest, max_rows, cuts.cuts(), latest == log_end)
            if at_cut is not None:
                return off.to_spark(at_cut)
        return off.to_spark(off.cap_offsets(position, latest, max_rows))

    def reportLatestOffset(self) -> dict | None:
        return off.to_spark(self._last_latest) if self._last_latest else None

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        ranges = off.plan_ranges(off.from_spark(start), off.from_spark(end))
        groups = off.pack_ranges(
            ranges,
            self.options.max_partitions,
            self.options.min_partition_records,
        )
        return [KafkaRangePartition(group) for group in groups]

    def commit(self, end: dict) -> None:
        """Spark's checkpoint is the source of truth for positions; nothing to commit."""

    def stop(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    # --- executor side ---------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaRangePartition)
        batches = read_ranges(
            self.options.client, partition.ranges, include_headers=self.options.include_headers
        )
        decoder = self.options.decoder
        if decoder is None:
            yield from batches
            return
        for batch in batches:
            yield decoded_batch(batch, decoder)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_log"] = None
        state["_cut_log"] = None
        return state


def decoded_batch(batch: pa.RecordBatch, decoder: ValueDecoder) -> pa.RecordBatch:
    """``batch`` with its values decoded: see "Decoding" in the module docstring."""
    decoded = decoder.decode(batch.column("key"), batch.column("value"))
    value = batch.column("value")
    kept = pc.if_else(decoded.error.is_null(), pa.scalar(None, value.type), value)
    columns = [kept if name == "value" else batch.column(name) for name in batch.schema.names]
    fields = [
        pa.field("_value", arrow_struct(decoder.fields)),
        pa.field("_tombstone", pa.bool_()),
        pa.field("error", pa.string()),
    ]
    return pa.RecordBatch.from_arrays(
        [*columns, decoded.value, decoded.tombstone, decoded.error],
        schema=pa.schema([*batch.schema, *fields]),
    )


def _min_offsets(
    latest: off.OffsetMap, target: off.OffsetMap, position: off.OffsetMap
) -> off.OffsetMap:
    """Cap ``latest`` at ``target`` (the availableNow target, ``endingOffsets`` or the
    ``endingOffsetsFile`` cap), never below the current position; a partition ``target`` does not
    list stays where it is."""
    capped: off.OffsetMap = {}
    for topic, parts in latest.items():
        capped[topic] = {}
        for partition, end in parts.items():
            goal = target.get(topic, {}).get(partition, position.get(topic, {}).get(partition, 0))
            here = position.get(topic, {}).get(partition, 0)
            capped[topic][partition] = max(here, min(end, goal))
    return capped


def read_offsets_cap(path: str) -> off.OffsetMap | None:
    """``endingOffsetsFile`` (a kappa extension): a JSON file of offsets, re-read every trigger,
    that the stream must not read past; a missing file means no cap. Partitions the file does
    not list do not advance."""
    try:
        return off.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
