"""spend_hourly: per customer and hour of event time, the transactions so far: count, total and
largest amount. An out-of-order transaction within the 10-minute grace re-aggregates its hour."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.topics import TRANSACTIONS
from quality.rules import Between, SumNonNegative
from streaming.define import Count, Max, Pipeline, Plan, Sum, Tumbling

VERSION = "v1"


def spend_per_window(size: timedelta) -> Plan:
    """Per customer and tumbling window of ``size`` on ``ts``: count, total and largest amount
    (a version with other windows changes only the size)."""
    return (
        TRANSACTIONS.stream()
        .group_by(
            "customer_id",
            window=Tumbling(size),
            aggregations={
                "txn_count": Count(),
                "total_amount": Sum("amount"),
                "max_amount": Max("amount"),
            },
            grace=timedelta(minutes=10),
        )
        .with_columns(total_amount=pc.field("total_amount").cast(pa.decimal128(18, 2)))
        .select("txn_count", "total_amount", "max_amount")
    )


PLAN = spend_per_window(timedelta(hours=1))

PIPELINE = Pipeline(
    name="spend_hourly",
    version=VERSION,
    plan=PLAN,
    description="Transactions per customer and hour (1 h tumbling windows on ts, grace 10 min).",
    quality=(
        Between("txn_count", min_value=1),
        Between("max_amount", min_value=0),
        SumNonNegative("total_amount"),
    ),
)
