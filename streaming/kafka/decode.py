"""Splitting one micro-batch of decoded records into good rows and dead letters.

The Kafka source decodes the values where it reads them (see "Decoding" in
``streaming.kafka.source`` and ``streaming.kafka.value_decoder``): each record arrives with its
typed ``_value`` and the ``error`` that makes it a dead letter, if any. Here the batch is split
lazily, in Spark, over a single read of the source.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from streaming.define.pipeline import Pipeline
from streaming.define.value_schema import parse_value_schema
from streaming.kafka.reader import kept_record_schema

DEAD_COLUMNS = (*kept_record_schema().names, "error")


def source_options(pipeline: Pipeline) -> dict[str, str]:
    """The Kafka source options that make it decode ``pipeline``'s values (none for a plan: its
    topics have different schemas and are decoded per topic on the driver)."""
    if pipeline.plan is not None:
        return {}
    return {
        "valueSchema": pipeline.value_schema,
        "requiredFields": ",".join(pipeline.required),
        "acceptTombstones": str(pipeline.accepts_tombstones).lower(),
    }


@dataclass(frozen=True)
class Decoded:
    """One decoded micro-batch: lazy DataFrames over a single read of the source.

    ``good`` carries an observation: the action that computes it also counts the batch's input
    records and dead letters (:meth:`counts`), so no separate pass over the source is needed.
    ``dead`` re-reads the source; only worth running when :meth:`counts` says there are any.
    """

    good: DataFrame
    dead: DataFrame
    observation: Observation

    def counts(self) -> tuple[int, int]:
        """(input records, dead letters) of the batch; valid after an action on ``good``."""
        metrics = self.observation.get
        return int(metrics["rows"]), int(metrics["dead"])


class BatchSplitter:
    """Splits each micro-batch of one pipeline into good rows and dead letters.

    The column expressions are built once, on first use, and reused for every batch: building
    them is a round trip to the JVM each, about as long as planning the whole batch otherwise.
    """

    def __init__(self, pipeline: Pipeline) -> None:
        self.fields = [f.name for f in parse_value_schema(pipeline.value_schema)]
        self._columns: tuple[Column, list[Column], list[Column], list[Column]] | None = None

    def _built(self) -> tuple[Column, list[Column], list[Column], list[Column]]:
        if self._columns is None:
            error = F.col("error")
            metrics = [F.count(F.lit(1)).alias("rows"), F.count(error).alias("dead")]
            dead = [F.col(c) for c in DEAD_COLUMNS]
            good = [
                *[F.col("_value")[name].alias(name) for name in self.fields],
                F.col("key").cast("string").alias("_key"),
                F.col("_tombstone"),
                F.col("topic").alias("_topic"),
                F.col("partition").alias("_partition"),
                F.col("offset").alias("_offset"),
                F.col("timestamp").alias("_timestamp"),
            ]
            self._columns = (error, metrics, dead, good)
        return self._columns

    def split(self, raw: DataFrame) -> Decoded:
        """Split one micro-batch read with :func:`source_options` into good rows and dead letters.

        Good rows have the value's fields as columns plus ``_key`` (string), ``_tombstone``,
        ``_topic``, ``_partition``, ``_offset`` and ``_timestamp``. Dead letters keep the raw
        record and an ``error`` column.
        """
        error, metrics, dead, good = self._built()
        observation = Observation()
        observed = raw.observe(observation, *metrics)
        return Decoded(
            good=observed.where(error.isNull()).select(*good),
            dead=raw.where(error.isNotNull()).select(*dead),
            observation=observation,
        )
