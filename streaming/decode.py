"""Decoding raw Kafka records into typed rows, and separating out the ones that cannot be.

A record is dead-lettered, with its reason, when its key is missing or not UTF-8, its value is not
UTF-8, not JSON, has a field of the wrong type, lacks a required field, or is a tombstone on a
pipeline that does not accept them. Everything is vectorised Spark SQL: no Python UDFs.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, VariantType

from streaming.pipeline import Pipeline

CORRUPT = "_corrupt_record"
META_COLUMNS = ("_key", "_tombstone", "_topic", "_partition", "_offset", "_timestamp")


def value_struct(pipeline: Pipeline) -> StructType:
    """The parse schema: string fields are read as VARIANT, because Spark's JSON reader would
    silently turn a number, boolean or object into its text; the variant keeps the JSON type."""
    parsed = StructType.fromDDL(pipeline.value_schema)
    fields = [
        StructField(f.name, VariantType(), True) if isinstance(f.dataType, StringType) else f
        for f in parsed.fields
    ]
    return StructType([*fields, StructField(CORRUPT, StringType(), True)])


def _field(schema: StructType, name: str) -> Column:
    """A parsed field with the type the pipeline declared (strings come back from VARIANT)."""
    column = F.col("_value")[name]
    if isinstance(schema[name].dataType, VariantType):
        return F.variant_get(column, "$", "string")
    return column


def _not_a_string(schema: StructType) -> Column:
    """A string field holding another JSON type (a JSON null counts as missing, not wrong)."""
    wrong = F.lit(False)
    for f in schema.fields:
        if isinstance(f.dataType, VariantType):
            kind = F.schema_of_variant(F.col("_value")[f.name])
            wrong = wrong | F.coalesce(~kind.isin("STRING", "VOID"), F.lit(False))
    return wrong


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
    """Split one micro-batch of raw records into good rows and dead letters.

    Good rows have the value's fields as columns plus ``_key`` (string), ``_tombstone``,
    ``_topic``, ``_partition``, ``_offset`` and ``_timestamp``. Dead letters keep the raw record
    and an ``error`` column.
    """
    schema = value_struct(pipeline)
    text = F.col("value").cast("string")
    parsed = raw.withColumn(
        "_value",
        F.when(
            F.col("value").isNotNull(),
            F.from_json(text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}),
        ),
    ).withColumn("error", _error(pipeline, schema))
    dead = parsed.where(F.col("error").isNotNull()).select(
        "key", "value", "topic", "partition", "offset", "timestamp", "error"
    )
    observation = Observation()
    observed = parsed.observe(
        observation,
        F.count(F.lit(1)).alias("rows"),
        F.count(F.col("error")).alias("dead"),
    )
    fields = [f.name for f in schema.fields if f.name != CORRUPT]
    good = observed.where(F.col("error").isNull()).select(
        *[_field(schema, name).alias(name) for name in fields],
        F.col("key").cast("string").alias("_key"),
        F.col("value").isNull().alias("_tombstone"),
        F.col("topic").alias("_topic"),
        F.col("partition").alias("_partition"),
        F.col("offset").alias("_offset"),
        F.col("timestamp").alias("_timestamp"),
    )
    return Decoded(good, dead, observation)


def _error(pipeline: Pipeline, schema: StructType) -> Column:
    """The first reason a record is bad, or null (``schema``: :func:`value_struct`)."""
    value = F.col("_value")
    checks: list[tuple[Column, Column]] = [
        (F.col("key").isNull(), F.lit("record has no key")),
        (~F.is_valid_utf8(F.col("key")), F.lit("key is not valid UTF-8")),
    ]
    if not pipeline.accepts_tombstones:
        reason = "null value (tombstone) on a topic whose records cannot be deleted"
        checks.append((F.col("value").isNull(), F.lit(reason)))
    checks += [
        (
            F.col("value").isNotNull() & ~F.is_valid_utf8(F.col("value")),
            F.lit("value is not valid UTF-8"),
        ),
        (
            F.col("value").isNotNull() & (value[CORRUPT].isNotNull() | _not_a_string(schema)),
            F.lit(f"value is not a JSON object matching the schema <{pipeline.value_schema}>"),
        ),
    ]
    for name in pipeline.required:
        checks.append(
            (
                F.col("value").isNotNull() & _field(schema, name).isNull(),
                F.lit(f"required field '{name}' is missing or null"),
            )
        )
    expr = None
    for condition, reason in checks:
        expr = F.when(condition, reason) if expr is None else expr.when(condition, reason)
    assert expr is not None
    return expr
