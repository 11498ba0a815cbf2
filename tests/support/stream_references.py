"""References of the stream-output pipelines, in plain Python over the records read back:
``large_trades`` and ``searches_by_term`` (a stream's records as rows, keyed by where each was
read, and the records their topics should hold) and ``search_counts`` (searches per query, over
the topic ``searches_by_term``). They share no code with the pipelines."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from typing import Any

from bench.support.reference import Stamped

Prefix = dict[str, dict[int, int]]
Rows = dict[tuple[int, int], dict[str, Any]]
LARGE = Decimal(100_000)
TRADE = ("trade_id", "ticker", "price", "size", "ts")


def _on(records: list[Stamped], prefix: Prefix, topic: str) -> list[Stamped]:
    """The records of ``topic`` below the prefix's end of their partition, in log order."""
    ends = prefix.get(topic, {})
    chosen = [r for r in records if r.topic == topic and r.offset < ends.get(r.partition, 0)]
    return sorted(chosen, key=lambda r: (r.partition, r.offset))


def _value(record: Stamped) -> dict[str, Any]:
    assert record.value is not None and record.key is not None
    return json.loads(record.value, parse_float=Decimal)


def large_trades_reference(records: list[Stamped], prefix: Prefix) -> tuple[Rows, set]:
    """Per trade on the prefix (by partition and offset) worth at least 100,000: its columns,
    the ticker its key, and ``notional`` = price * size (nothing is late)."""
    rows: Rows = {}
    for record in _on(records, prefix, "trades"):
        trade = _value(record)
        price = Decimal(str(trade["price"])).quantize(Decimal("0.0001"))
        notional = price * trade["size"]
        if notional >= LARGE:
            row = {**{c: trade[c] for c in TRADE}, "ticker": record.key.decode(), "price": price}
            row = {"partition": record.partition, "offset": record.offset, **row}
            rows[(record.partition, record.offset)] = {**row, "notional": notional}
    return rows, set()


def searches_by_term_reference(records: list[Stamped], prefix: Prefix) -> tuple[Rows, set]:
    """Every search on the prefix, by partition and offset (nothing is late)."""
    rows: Rows = {}
    for record in _on(records, prefix, "searches"):
        search = _value(record)
        rows[(record.partition, record.offset)] = {
            "partition": record.partition,
            "offset": record.offset,
            "user_id": record.key.decode(),
            "query": search["query"],
            "ts": search["ts"],
        }
    return rows, set()


def search_counts_reference(
    records: list[Stamped], prefix: Prefix
) -> tuple[dict[str, dict[str, Any]], set]:
    """Per query, how many records of the topic ``searches_by_term`` on the prefix name it."""
    counts = Counter(_value(r)["query"] for r in _on(records, prefix, "searches_by_term"))
    return {q: {"query": q, "searches": n} for q, n in counts.items()}, set()


def topic_records(rows: Rows, key: str, columns: tuple[str, ...]) -> Counter:
    """The records a topic holding ``rows`` once each should have: (key, the row's ``columns``
    as sorted JSON, decimals as floats), counted."""

    def plain(value: Any) -> Any:
        return float(value) if isinstance(value, Decimal) else value

    return Counter(
        (str(row[key]), json.dumps({c: plain(row[c]) for c in columns}, sort_keys=True))
        for row in rows.values()
    )


def read_back(records: list[Any]) -> Counter:
    """Records read back from a topic as :func:`topic_records` counts them."""
    return Counter(
        (r.key.decode(), json.dumps(json.loads(r.value), sort_keys=True)) for r in records
    )
