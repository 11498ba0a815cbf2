"""Splitting one micro-batch of decoded records into good rows and dead letters.

The Kafka source decodes the values where it reads them (see "Decoding" in
``streaming.kafka_source`` and ``streaming.value_decoder``): each record arrives with its typed
``_value`` and the ``error`` that makes it a dead letter, if any. Here the batch is split lazily,
in Spark, over a single read of the source.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from streaming.pipeline import Pipeline
from streaming.value_schema import parse_value_schema


def source_options(pipeline: Pipeline) -> dict[str, str]:
    """The Kafka source options that make it decode ``pipeline``'s values."""
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


def decode(raw: DataFrame, pipeline: Pipeline) -> Decoded:
    """Split one micro-batch read with :func:`source_options` into good rows and dead letters.

    Good rows have the value's fields as columns plus ``_key`` (string), ``_tombstone``,
    ``_topic``, ``_partition``, ``_offset`` and ``_timestamp``. Dead letters keep the raw record
    and an ``error`` column.
    """
    dead = raw.where(F.col("error").isNotNull()).select(
        "key", "value", "topic", "partition", "offset", "timestamp", "error"
    )
    observation = Observation()
    observed = raw.observe(
        observation,
        F.count(F.lit(1)).alias("rows"),
        F.count(F.col("error")).alias("dead"),
    )
    fields = [f.name for f in parse_value_schema(pipeline.value_schema)]
    good = observed.where(F.col("error").isNull()).select(
        *[F.col("_value")[name].alias(name) for name in fields],
        F.col("key").cast("string").alias("_key"),
        F.col("_tombstone"),
        F.col("topic").alias("_topic"),
        F.col("partition").alias("_partition"),
        F.col("offset").alias("_offset"),
        F.col("timestamp").alias("_timestamp"),
    )
    return Decoded(good, dead, observation)
