"""stock_stats_final: ``stock_stats``, each minute written once when it closes (its end plus
the grace reached by the stream time of its ticker's partition) and never changed; published to
the topic ``stock_stats_final``, which therefore holds each window exactly once."""

from __future__ import annotations

from pipelines.stock_stats import QUALITY, per_minute
from pipelines.topics import STOCK_STATS_FINAL
from streaming.define import Pipeline

VERSION = "v1"

PIPELINE = Pipeline(
    name="stock_stats_final",
    version=VERSION,
    plan=per_minute(emit="final"),
    publish=STOCK_STATS_FINAL,
    quality=QUALITY,
    description="Final per-minute trade statistics per ticker, once per window, published.",
)
