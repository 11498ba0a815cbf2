"""stock_stats: per ticker and minute of event time, the trades so far: count, average, lowest
and highest price, and volume (the sum of sizes). Trades within the 10-minute grace re-aggregate
their minute; a producer that comes back hours late has its trades dead-lettered as late."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pipelines.topics import TRADES
from quality.rules import Between
from streaming.define import Count, Max, Mean, Min, Pipeline, Plan, Sum, Tumbling

VERSION = "v1"
STATISTICS = ("trade_count", "avg_price", "min_price", "max_price", "volume")


def per_minute(emit: Literal["updates", "final"] = "updates") -> Plan:
    """The statistics of 1-minute tumbling windows; ``emit="final"`` writes each minute once,
    when it closes."""
    return (
        TRADES.stream()
        .group_by(
            "ticker",
            window=Tumbling(timedelta(minutes=1)),
            aggregations={
                "trade_count": Count(),
                "avg_price": Mean("price"),
                "min_price": Min("price"),
                "max_price": Max("price"),
                "volume": Sum("size"),
            },
            emit=emit,
        )
        .select(*STATISTICS)
    )


QUALITY = (Between("trade_count", min_value=1), Between("min_price", min_value=0))

PIPELINE = Pipeline(
    name="stock_stats",
    version=VERSION,
    plan=per_minute(),
    quality=QUALITY,
    description="Trades per ticker and minute: count, average, min and max price, volume.",
)
