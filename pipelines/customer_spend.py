"""customer_spend: per customer, the running count and sum of transaction amounts and the time of
the latest transaction, folded exactly once per event from the `transactions` stream.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.topics import TRANSACTIONS
from quality.rules import Between, NotInFuture, SumNonNegative
from streaming.define import Accumulate, Pipeline

VERSION = "v1"

TABLE_SCHEMA = pa.schema(
    [
        ("customer_id", pa.string()),
        ("txn_count", pa.int64()),
        ("total_amount", pa.decimal128(18, 2)),
        ("last_txn_ts", pa.int64()),
    ]
)


def transform(records: DataFrame) -> DataFrame:
    """Aggregate one micro-batch per customer; the sink adds it to the stored totals."""
    return records.groupBy(F.col("_key").alias("customer_id")).agg(
        F.count(F.lit(1)).alias("txn_count"),
        F.sum("amount").cast("decimal(18,2)").alias("total_amount"),
        F.max("ts").alias("last_txn_ts"),
    )


PIPELINE = Pipeline(
    name="customer_spend",
    version=VERSION,
    topics=(TRANSACTIONS,),
    transform=transform,
    table=Accumulate(
        key="customer_id",
        updates={
            "txn_count": "t.txn_count + s.txn_count",
            "total_amount": "t.total_amount + s.total_amount",
            "last_txn_ts": "greatest(t.last_txn_ts, s.last_txn_ts)",
        },
    ),
    table_schema=TABLE_SCHEMA,
    description="Running transaction count, total amount and last transaction time per customer.",
    quality=(
        Between("txn_count", min_value=1),
        SumNonNegative("total_amount"),
        NotInFuture("last_txn_ts", tolerance_ms=5 * 60 * 1000),
    ),
)
