"""Independent references for the seeds' applications: each pipeline's definition evaluated in
plain Python on a prefix of its topics, record by record, sharing no code with the pipelines,
the operators or the authoring API.

Common rules (the platform's, restated): per partition a record is late when its event time is
more than the grace (10 minutes) below the largest event time before it in that partition; late
records are ignored. A partition's horizon is its largest event time minus the grace: a window
of a key closes by the horizon of the key's own partition, whatever the other partitions hold.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bench.support.reference import Stamped
from tests.support.enrichment import GRACE_MS, Prefix, on_time

Late = set[tuple[str, int, int]]
MINUTE_MS = 60_000
HOUR_MS = 3_600_000


def _value(record: Stamped) -> dict[str, Any]:
    value = json.loads(record.value)  # type: ignore[arg-type]
    return value


def _time_of(field: str) -> Callable[[Stamped], int]:
    def time(record: Stamped) -> int:
        return record.timestamp if record.value is None else int(_value(record)[field])

    return time


def _kept(records: list[Stamped], prefix: Prefix, topic: str, field: str) -> tuple[list, Late]:
    return on_time([r for r in records if r.topic == topic], prefix, _time_of(field))


def horizons(records: list[Stamped], prefix: Prefix, topic: str, field: str) -> dict[int, int]:
    """Per partition of ``topic`` holding a record on the prefix: its largest event time
    (``field``) minus the grace."""
    ends = prefix.get(topic, {})
    highest: dict[int, int] = {}
    for r in records:
        if r.topic == topic and r.offset < ends.get(r.partition, 0):
            t = _time_of(field)(r)
            highest[r.partition] = max(highest.get(r.partition, t), t)
    return {partition: t - GRACE_MS for partition, t in highest.items()}


# stock statistics


Windows = dict[tuple[str, int], list[dict]]


def _windows(
    records: list[Stamped], prefix: Prefix, size: int, advance: int
) -> tuple[Windows, dict[str, int], Late]:
    """The on-time trades per (ticker, window start), each ticker's partition, the late."""
    trades, late = _kept(records, prefix, "trades", "ts")
    windows: Windows = {}
    partitions: dict[str, int] = {}
    for r in trades:
        value = _value(r)
        ticker = r.key.decode()  # type: ignore[union-attr]
        partitions[ticker] = r.partition
        start = value["ts"] - value["ts"] % advance
        while start > value["ts"] - size:
            windows.setdefault((ticker, start), []).append(value)
            start -= advance
    return windows, partitions, late


def _average(trades: list[dict]) -> float:
    total = sum((Decimal(str(t["price"])) for t in trades), Decimal(0))
    return float(total) / len(trades)


def stock_stats_reference(
    records: list[Stamped], prefix: Prefix, final: bool = False
) -> tuple[dict[tuple[str, int], dict[str, Any]], Late]:
    """stock_stats (or, with ``final``, stock_stats_final: only minutes whose end is at or
    below the horizon of the ticker's partition of ``trades``) on ``prefix``: per (ticker,
    minute) count, average, min and max price and the sum of sizes."""
    windows, partitions, late = _windows(records, prefix, MINUTE_MS, MINUTE_MS)
    closed = horizons(records, prefix, "trades", "ts")
    rows = {}
    for (ticker, start), trades in windows.items():
        if final and start + MINUTE_MS > closed[partitions[ticker]]:
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
    windows, _, late = _windows(records, prefix, 5 * MINUTE_MS, MINUTE_MS)
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


# fraud by payment history

MEMBER_STATES = "AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK"
EU_COUNTRIES = set(MEMBER_STATES.split())


def fraud_by_history_reference(
    records: list[Stamped], prefix: Prefix, min_history: int = 3
) -> tuple[dict[str, dict[str, Any]], Late]:
    """fraud_by_history on ``prefix``: per customer, its on-time transactions in the order of
    (ts, partition, offset); a transaction is an alert when at least ``min_history`` came
    before it and its region ("EU" for a member state, else its country) is none of theirs.
    Rows by txn_id."""
    txns, late = _kept(records, prefix, "transactions", "ts")
    history: dict[str, list[tuple[int, int, int, dict[str, Any]]]] = {}
    for r in txns:
        value = _value(r)
        value["customer_id"] = r.key.decode()  # type: ignore[union-attr]
        history.setdefault(value["customer_id"], []).append(
            (value["ts"], r.partition, r.offset, value)
        )
    rows = {}
    for payments in history.values():
        counts: dict[str, int] = {}
        for _, _, _, txn in sorted(payments, key=lambda p: p[:3]):
            place = "EU" if txn["country"] in EU_COUNTRIES else txn["country"]
            before = sum(counts.values())
            if before >= min_history and place not in counts:
                seen = ", ".join(f"{name} ({counts[name]})" for name in sorted(counts))
                rows[txn["txn_id"]] = {
                    "txn_id": txn["txn_id"],
                    "customer_id": txn["customer_id"],
                    "amount": Decimal(str(txn["amount"])).quantize(Decimal("0.01")),
                    "country": txn["country"],
                    "ts": txn["ts"],
                    "region": place,
                    "earlier_payments": before,
                    "reason": f"first payment from {place} after {before} payments from {seen}",
                }
            counts[place] = counts.get(place, 0) + 1
    return rows, late


def quiet_customers_reference(
    records: list[Stamped], prefix: Prefix, quiet_ms: int = 30 * 24 * HOUR_MS
) -> tuple[dict[str, dict[str, Any]], Late]:
    """quiet_customers on ``prefix``: a row for each customer whose latest on-time transaction
    (by ts) is at least ``quiet_ms`` below the horizon of the customer's partition. Rows by
    customer_id."""
    txns, late = _kept(records, prefix, "transactions", "ts")
    ends = horizons(records, prefix, "transactions", "ts")
    latest: dict[str, tuple[int, int]] = {}
    for r in txns:
        customer, ts = r.key.decode(), int(_value(r)["ts"])  # type: ignore[union-attr]
        if customer not in latest or ts > latest[customer][0]:
            latest[customer] = (ts, r.partition)
    rows = {}
    for customer, (ts, partition) in latest.items():
        if ends[partition] >= ts + quiet_ms:
            row = {"customer_id": customer, "last_txn_ts": ts, "quiet_since": ts + quiet_ms}
            rows[customer] = row
    return rows, late


# click-stream enrichment

PROFILE_COLUMNS = ("age", "gender", "zip_code")


def clicks_enriched_reference(records: list[Stamped], prefix: Prefix) -> tuple[dict, Late]:
    """clicks_enriched on ``prefix``: each click (per click_id the one of greatest (ts, partition,
    offset)) with the user's profile version of greatest (event time, partition, offset) at or
    before the click's ts (none when there is none or it is a deletion, whose event time is its
    record timestamp), and the terms of the user's searches with ts in [ts - 1 s, ts] ordered by
    (ts, partition, offset), as a JSON list (null when there are none) with their count. Rows by
    click_id."""
    profiles, late_p = _kept(records, prefix, "profiles", "updated_at")
    searches, late_s = _kept(records, prefix, "searches", "ts")
    clicks, late_c = _kept(records, prefix, "clicks", "ts")
    versions: dict[str, list[tuple[int, int, int, dict[str, Any] | None]]] = {}
    for r in profiles:
        value = None if r.value is None else _value(r)
        at = _time_of("updated_at")(r)
        versions.setdefault(r.key.decode(), []).append((at, r.partition, r.offset, value))  # type: ignore[union-attr]
    found: dict[str, list[tuple[int, int, int, str]]] = {}
    for r in searches:
        value = _value(r)
        found.setdefault(r.key.decode(), []).append(  # type: ignore[union-attr]
            (value["ts"], r.partition, r.offset, value["query"])
        )
    latest: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
    for r in clicks:
        value = _value(r)
        value["user_id"] = r.key.decode()  # type: ignore[union-attr]
        rank = (value["ts"], r.partition, r.offset)
        if value["click_id"] not in latest or latest[value["click_id"]][0] < rank:
            latest[value["click_id"]] = (rank, value)
    rows = {}
    for click_id, (_, click) in latest.items():
        user, t = click["user_id"], click["ts"]
        before = [v for v in versions.get(user, []) if v[0] <= t]
        profile = max(before, key=lambda v: v[:3])[3] if before else None
        terms = [s[3] for s in sorted(s for s in found.get(user, []) if t - 1_000 <= s[0] <= t)]
        rows[click_id] = {
            "click_id": click_id,
            "user_id": user,
            "url": click["url"],
            "ts": t,
            **{c: None if profile is None else profile[c] for c in PROFILE_COLUMNS},
            "search_terms": json.dumps(terms) if terms else None,
            "search_count": len(terms),
        }
    return rows, late_p | late_s | late_c


def clicks_per_zip_reference(
    records: list[Stamped], prefix: Prefix
) -> tuple[dict[tuple[str, int], dict[str, Any]], Late]:
    """clicks_per_zip on ``prefix``: the clicks of clicks_enriched with a profile, counted per
    (zip code, hour of the click's ts)."""
    clicks, late = clicks_enriched_reference(records, prefix)
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for click in clicks.values():
        if click["zip_code"] is None:
            continue
        hour = click["ts"] - click["ts"] % HOUR_MS
        row = rows.setdefault(
            (click["zip_code"], hour), {"zip_code": click["zip_code"], "window_start": hour}
        )
        row["clicks"] = row.get("clicks", 0) + 1
    return rows, late


# sessions of clicks

SESSION_GAP_MS = 30 * MINUTE_MS


def click_sessions_reference(
    records: list[Stamped], prefix: Prefix
) -> tuple[dict[tuple[str, int], dict[str, Any]], Late]:
    """click_sessions on ``prefix``: per user, the on-time clicks in event-time order, a new
    session starting at a click 30 minutes or more after the previous one; per (user, first
    click's ts) the last click's ts and the count."""
    clicks, late = _kept(records, prefix, "clicks", "ts")
    times: dict[str, list[int]] = {}
    for r in clicks:
        times.setdefault(r.key.decode(), []).append(_value(r)["ts"])  # type: ignore[union-attr]
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for user, seen in times.items():
        sessions: list[list[int]] = []
        for t in sorted(seen):
            if sessions and t - sessions[-1][-1] < SESSION_GAP_MS:
                sessions[-1].append(t)
            else:
                sessions.append([t])
        for session in sessions:
            rows[(user, session[0])] = {
                "user_id": user,
                "session_start": session[0],
                "session_end": session[-1],
                "clicks": len(session),
            }
    return rows, late
