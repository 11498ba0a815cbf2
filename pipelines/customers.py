"""customers: the customer-profile changelog compacted into one row per live customer (a KTable).

A null value (tombstone) deletes the customer; a later update re-creates it.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.topics import CUSTOMERS
from quality.reference import ISO_3166_ALPHA2
from quality.rules import InSet, MatchesRegex, NotInFuture, NotNull
from streaming.define import LatestPerKey, Pipeline

VERSION = "v1"

# The topic's columns (the key from the Kafka key), then where each row's record was read.
TABLE_SCHEMA = CUSTOMERS.schema().append(pa.field("partition", pa.int32()))
TABLE_SCHEMA = TABLE_SCHEMA.append(pa.field("offset", pa.int64()))


def transform(records: DataFrame) -> DataFrame:
    """One change row per record; the sink keeps the latest per customer."""
    return records.select(
        F.col("_key").alias("customer_id"),
        "name",
        "email",
        "country",
        "updated_at",
        F.col("_partition").alias("partition"),
        F.col("_offset").alias("offset"),
        "_partition",
        "_offset",
        F.col("_tombstone").alias("_delete"),
    )


PIPELINE = Pipeline(
    name="customers",
    version=VERSION,
    topics=(CUSTOMERS,),
    transform=transform,
    table=LatestPerKey(key="customer_id", position=("partition", "offset")),
    table_schema=TABLE_SCHEMA,
    description="Latest profile per customer from the `customers` changelog (tombstones delete).",
    quality=(
        NotNull("name"),
        InSet("country", tuple(sorted(ISO_3166_ALPHA2))),
        MatchesRegex("email", r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$"),
        NotInFuture("updated_at", tolerance_ms=5 * 60 * 1000),
    ),
)
