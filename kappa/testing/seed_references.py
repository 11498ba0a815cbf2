"""Independent references for the seeds' applications: each pipeline's definition evaluated in
plain Python on a prefix of its topics, record by record, sharing no code with the pipelines,
the operators or the authoring API.

Common rules (the platform's, restated): per partition a record is late when its event time is
more than the grace (10 minutes) below the largest event time before it in that partition; late
records are ignored. The horizon of a set of topics is the smallest (largest event time - grace)
over their partitions, unknown while a partition has no record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from kappa.testing.enrichment import GRACE_MS, Prefix, on_time
from kappa.testing.reference import Stamped

Late = set[tuple[str, int, int]]
MINUTE_MS = 60_000


def _value(record: Stamped) -> dict[str, Any]:
    value = json.loads(record.value)  # type: ignore[arg-type]
    return value


def _time_of(field: str) -> Callable[[Stamped], int]:
    def time(record: Stamped) -> int:
        return record.timestamp if record.value is None else int(_value(record)[field])

    return time


def _kept(records: list[Stamped], prefix: Prefix, topic: str, field: str) -> tuple[list, Late]:
    return on_time([r for r in records if r.topic == topic], prefix, _time_of(field))


def horizon(records: list[Stamped], prefix: Prefix, topics: dict[str, str]) -> float | None:
    """The horizon of ``topics`` (topic -> event-time field) on the prefix; None if unknown."""
    values = []
    for topic, field in topics.items():
        for partition, end in prefix.get(topic, {}).items():
            times = [
                _time_of(field)(r)
                for r in records
                if r.topic == topic and r.partition == partition and r.offset < end
            ]
            if not times:
                return None
            values.append(max(times) - GRACE_MS)
    return min(values) if values else None


# stock statistics


def _windows(
    records: list[Stamped], prefix: Prefix, size: int, advance: int
) -> tuple[dict[tuple[str, int], list[dict]], Late]:
    trades, late = _kept(records, prefix, "trades", "ts")
    windows: dict[tuple[str, int], list[dict]] = {}
    for r in trades:
        value = _value(r)
        start = value["ts"] - value["ts"] % advance
        while start > value["ts"] - size:
            windows.setdefault((r.key.decode(), start), []).append(value)  # type: ignore[union-attr]
            start -= advance
    return windows, late


def _average(trades: list[dict]) -> float:
    total = sum((Decimal(str(t["price"])) for t in trades), Decimal(0))
    return float(total) / len(trades)


def stock_stats_reference(
    records: list[Stamped], prefix: Prefix, final: bool = False
) -> tuple[dict[tuple[str, int], dict[str, Any]], Late]:
    """stock_stats (or, with ``final``, stock_stats_final: only minutes whose end is at or
    below the horizon of ``trades``) on ``prefix``: per (ticker, minute) count, average, min
    and max price and the sum of sizes."""
    windows, late = _windows(records, prefix, MINUTE_MS, MINUTE_MS)
    closed = horizon(records, prefix, {"trades": "ts"}) if final else None
    rows = {}
    for (ticker, start), trades in windows.items():
        if final and (closed is None or start + MINUTE_MS > closed):
            continue
        prices = [Decimal(str(t["price"])) for t in trades]
        rows[(ticker, start)] = {
            "ticker": ticker,
            "window_start": start,
            "trade_count": len(trades),
            "avg_price": _average(trades),
            "min_price": min(prices),
            "max_price": max(prices),
            "volume": sum(t["size"] for t in trades),
        }
    return rows, late


def stock_moving_avg_reference(
    records: list[Stamped], prefix: Prefix
) -> tuple[dict[tuple[str, int], dict[str, Any]], Late]:
    """stock_moving_avg on ``prefix``: per (ticker, start) of 5-minute windows every minute,
    the trade count and average price."""
    windows, late = _windows(records, prefix, 5 * MINUTE_MS, MINUTE_MS)
    rows = {
        (ticker, start): {
            "ticker": ticker,
            "window_start": start,
            "trade_count": len(trades),
            "avg_price": _average(trades),
        }
        for (ticker, start), trades in windows.items()
    }
    return rows, late
