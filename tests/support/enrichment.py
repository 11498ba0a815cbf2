"""An independent reference for transactions_enriched: the definition evaluated in plain Python
on a prefix of the topics, record by record, with no code shared with the pipeline or the
operators.

Definition: per partition, a record is late when its event time is more than the grace period
below the largest event time before it in that partition; late records are ignored. Each
transaction (key ``txn_id``; the one with the greatest (ts, partition, offset) if a key repeats)
gets the customer version with the greatest (event time, partition, offset) whose event time is
at or below ``ts``; none if there is none or it is a tombstone.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from bench.support.reference import Stamped

GRACE_MS = 600_000
Prefix = dict[str, dict[int, int]]


def on_time(
    records: list[Stamped], prefix: Prefix, event_time: Any, grace_ms: int = GRACE_MS
) -> tuple[list[Stamped], set[tuple[str, int, int]]]:
    """The records of ``prefix`` that are not late, and the late ones as (topic, partition,
    offset)."""
    kept, late = [], set()
    by_partition: dict[tuple[str, int], list[Stamped]] = {}
    for record in records:
        if record.offset < prefix.get(record.topic, {}).get(record.partition, 0):
            by_partition.setdefault((record.topic, record.partition), []).append(record)
    for rows in by_partition.values():
        highest = None
        for record in sorted(rows, key=lambda r: r.offset):
            t = event_time(record)
            if highest is not None and t < highest - grace_ms:
                late.add((record.topic, record.partition, record.offset))
                continue
            kept.append(record)
            highest = t if highest is None else max(highest, t)
    return kept, late


def _customer_time(record: Stamped) -> int:
    if record.value is None:
        return record.timestamp
    return int(json.loads(record.value)["updated_at"])


def _txn_time(record: Stamped) -> int:
    return int(json.loads(record.value)["ts"])


def enriched_reference(
    records: list[Stamped], prefix: Prefix
) -> tuple[dict[str, dict[str, Any]], set[tuple[str, int, int]]]:
    """transactions_enriched on ``prefix``: rows by txn_id, and the late records."""
    customers = [r for r in records if r.topic == "customers"]
    txns = [r for r in records if r.topic == "transactions"]
    customers, late_c = on_time(customers, prefix, _customer_time)
    txns, late_t = on_time(txns, prefix, _txn_time)
    versions: dict[str, list[tuple[int, int, int, dict | None]]] = {}
    for record in customers:
        key = record.key.decode()
        value = None if record.value is None else json.loads(record.value)
        versions.setdefault(key, []).append(
            (_customer_time(record), record.partition, record.offset, value)
        )
    defining: dict[str, tuple[tuple[int, int, int], dict]] = {}
    for record in txns:
        value = json.loads(record.value)
        rank = (int(value["ts"]), record.partition, record.offset)
        value["customer_id"] = record.key.decode()
        if value["txn_id"] not in defining or defining[value["txn_id"]][0] < rank:
            defining[value["txn_id"]] = (rank, value)
    rows = {}
    for txn_id, (_, value) in defining.items():
        candidates = [v for v in versions.get(value["customer_id"], []) if v[0] <= value["ts"]]
        match = max(candidates, key=lambda v: v[:3])[3] if candidates else None
        customer_country = None if match is None else match["country"]
        rows[txn_id] = {
            "txn_id": txn_id,
            "customer_id": value["customer_id"],
            "amount": Decimal(str(value["amount"])),
            "currency": value["currency"],
            "country": value["country"],
            "ts": value["ts"],
            "customer_country": customer_country,
            "customer_name": None if match is None else match["name"],
            "suspicious": customer_country is None or customer_country != value["country"],
        }
    return rows, late_c | late_t


def spend_hourly_reference(
    records: list[Stamped], prefix: Prefix, size_ms: int = 3_600_000
) -> tuple[dict[tuple[str, int], dict[str, Any]], set[tuple[str, int, int]]]:
    """spend_hourly on ``prefix``: rows by (customer_id, window_start), and the late records.
    ``size_ms``: the windows' length (a variant's)."""
    txns = [r for r in records if r.topic == "transactions"]
    kept, late = on_time(txns, prefix, _txn_time)
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for record in kept:
        value = json.loads(record.value)
        start = value["ts"] - value["ts"] % size_ms
        key = (record.key.decode(), start)
        amount = Decimal(str(value["amount"]))
        row = rows.setdefault(
            key,
            {
                "customer_id": key[0],
                "window_start": start,
                "txn_count": 0,
                "total_amount": Decimal("0.00"),
                "max_amount": amount,
            },
        )
        row["txn_count"] += 1
        row["total_amount"] += amount
        row["max_amount"] = max(row["max_amount"], amount)
    return rows, late


def clicks_last_search_reference(
    records: list[Stamped], prefix: Prefix, before_ms: int = 600_000
) -> tuple[dict[str, dict[str, Any]], set[tuple[str, int, int]]]:
    """clicks_last_search on ``prefix``: each click (the greatest (ts, partition, offset) per
    click_id) with the query of the same user's search of greatest (ts, partition, offset) with
    ts in [click ts - 10 min, click ts]; and the late records."""
    clicks, late_c = on_time([r for r in records if r.topic == "clicks"], prefix, _txn_time)
    searches, late_s = on_time([r for r in records if r.topic == "searches"], prefix, _txn_time)
    by_user: dict[str, list[tuple[int, int, int, str]]] = {}
    for record in searches:
        value = json.loads(record.value)
        user = record.key.decode()
        by_user.setdefault(user, []).append(
            (value["ts"], record.partition, record.offset, value["query"])
        )
    defining: dict[str, tuple[tuple[int, int, int], dict]] = {}
    for record in clicks:
        value = json.loads(record.value)
        value["user_id"] = record.key.decode()
        rank = (value["ts"], record.partition, record.offset)
        if value["click_id"] not in defining or defining[value["click_id"]][0] < rank:
            defining[value["click_id"]] = (rank, value)
    rows = {}
    for click_id, (_, value) in defining.items():
        t = value["ts"]
        near = [s for s in by_user.get(value["user_id"], []) if t - before_ms <= s[0] <= t]
        rows[click_id] = {
            "click_id": click_id,
            "user_id": value["user_id"],
            "url": value["url"],
            "ts": t,
            "search_query": max(near)[3] if near else None,
        }
    return rows, late_c | late_s
