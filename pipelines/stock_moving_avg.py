"""stock_moving_avg: the seed's moving five-minute average: per ticker, windows of 5 minutes
starting every minute, with the trade count and average price."""

from __future__ import annotations

from datetime import timedelta

from pipelines.topics import TRADES
from quality.rules import Between
from streaming.define import Count, Hopping, Mean, Pipeline

VERSION = "v1"

PLAN = (
    TRADES.stream()
    .group_by(
        "ticker",
        window=Hopping(size=timedelta(minutes=5), advance=timedelta(minutes=1)),
        aggregations={"trade_count": Count(), "avg_price": Mean("price")},
    )
    .select("trade_count", "avg_price")
)

PIPELINE = Pipeline(
    name="stock_moving_avg",
    version=VERSION,
    plan=PLAN,
    quality=(Between("trade_count", min_value=1),),
    description="Trade count and average price per ticker over 5 minutes, every minute.",
)
