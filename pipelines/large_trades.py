"""large_trades: the trades worth at least 100,000 (price times size), each sent once to the
topic ``large_trades``, keyed by ticker, with its notional."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.topics import LARGE_TRADES, TRADES
from streaming.define import Pipeline, Stream

VERSION = "v1"

notional = pc.field("price") * pc.field("size")  # decimal(38,4)
LARGE = pa.scalar(Decimal(100_000), pa.decimal128(38, 4))
PLAN = TRADES.stream().rows().with_columns(notional=notional).where(notional >= LARGE)
PIPELINE = Pipeline(
    name="large_trades",
    version=VERSION,
    plan=PLAN,
    publish=Stream(LARGE_TRADES, key="ticker"),
    description="Trades of a notional of 100,000 or more, to the topic large_trades.",
)
