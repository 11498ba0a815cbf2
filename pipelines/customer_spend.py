"""customer_spend: per customer, the running count and sum of transaction amounts and the time of
the latest transaction, each transaction of the `transactions` stream counted exactly once.

The aggregates are unwindowed: a transaction counts whenever it comes (nothing is late).
"""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.topics import TRANSACTIONS
from quality.rules import Between, NotInFuture, SumNonNegative
from streaming.define import Count, Max, Pipeline, Sum

VERSION = "v1"

PLAN = (
    TRANSACTIONS.stream()
    .group_by(
        "customer_id",
        aggregations={
            "txn_count": Count(),
            "total_amount": Sum("amount"),
            "last_txn_ts": Max("ts"),
        },
    )
    .with_columns(total_amount=pc.field("total_amount").cast(pa.decimal128(18, 2)))
)

PIPELINE = Pipeline(
    name="customer_spend",
    version=VERSION,
    plan=PLAN,
    description="Running transaction count, total amount and last transaction time per customer.",
    quality=(
        Between("txn_count", min_value=1),
        SumNonNegative("total_amount"),
        NotInFuture("last_txn_ts", tolerance=timedelta(minutes=5)),
    ),
)
