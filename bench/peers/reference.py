"""Each workload's exact answer on a log, in plain Python, fed record by record as it is written.

It shares no code with the platform's pipelines or operators, nor with the engines: it is the
definition, written out. The definitions are the platform's (README, Streaming semantics):

- time: a record's event time is its value's time field (``updated_at``, ``ts``), a tombstone's
  its record timestamp; per topic partition, a record more than the grace period (10 minutes)
  below the largest event time before it in that partition is late and ignored;
- latest per key: per key the last record of the log; a tombstone deletes (no time involved);
- fraud join: each transaction with the customer version of greatest (event time, partition,
  offset) at or before its time, none if that version is a tombstone;
- hourly spend: per customer and hour of event time, count, total and largest amount;
- click-search join: each click with the query of the user's search of greatest (event time,
  partition, offset) in [click time - 10 minutes, click time].

A table maps each key to a tuple of the values compared (``outputs`` reads engines the same way).
"""

from __future__ import annotations

import bisect
import json
from decimal import Decimal
from typing import Any

from bench.peers.workloads import CLOSING_PREFIX, GRACE_MS, Record

WINDOW_MS = 3_600_000
WITHIN_MS = 600_000
Position = tuple[str, int, int]  # topic, partition, offset
_AFTER = (float("inf"), float("inf"))


def cents(amount: Any) -> int:
    """An amount (JSON number, Decimal, or its text) in cents, exactly."""
    return int((Decimal(str(amount)) * 100).to_integral_value())


class Reference:
    """Fed every record of the log in order (``add``); ``table()`` is the answer, ``late`` the
    records ignored as late."""

    timed = True  # whether the lateness rule applies

    def __init__(self) -> None:
        self.late: list[Position] = []
        self._stream_time: dict[tuple[str, int], int] = {}

    def add(self, record: Record, offset: int) -> None:
        value = None if record.value is None else json.loads(record.value, parse_float=Decimal)
        t = record.ts if value is None else int(value.get("updated_at", value.get("ts")))
        if self.timed:
            where = (record.topic, record.partition)
            highest = self._stream_time.get(where)
            if highest is not None and t < highest - GRACE_MS:
                self.late.append((record.topic, record.partition, offset))
                return
            self._stream_time[where] = t if highest is None else max(highest, t)
        self._apply(record, offset, value, t)

    def _apply(self, record: Record, offset: int, value: Any, t: int) -> None:
        raise NotImplementedError

    def table(self) -> dict[Any, tuple]:
        raise NotImplementedError


class LatestReference(Reference):
    timed = False

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, tuple] = {}

    def _apply(self, record: Record, offset: int, value: Any, t: int) -> None:
        if value is None:
            self.rows.pop(record.key, None)
        else:
            self.rows[record.key] = (
                value["name"],
                value["email"],
                value["country"],
                int(value["updated_at"]),
            )

    def table(self) -> dict[Any, tuple]:
        return dict(self.rows)


class FraudReference(Reference):
    def __init__(self) -> None:
        super().__init__()
        # per customer: (event time, partition, offset) and (country, name), None if deleted
        self.versions: dict[str, list[tuple[tuple[int, int, int], tuple | None]]] = {}
        self.transactions: dict[str, tuple[tuple[int, int, int], dict]] = {}

    def _apply(self, record: Record, offset: int, value: Any, t: int) -> None:
        rank = (t, record.partition, offset)
        if record.topic == "customers":
            profile = None if value is None else (value["country"], value["name"])
            self.versions.setdefault(record.key, []).append((rank, profile))
            return
        value["customer_id"] = record.key
        txn_id = value["txn_id"]
        if txn_id not in self.transactions or self.transactions[txn_id][0] < rank:
            self.transactions[txn_id] = (rank, value)

    def table(self) -> dict[Any, tuple]:
        ranks: dict[str, list[tuple[int, int, int]]] = {}
        for key, versions in self.versions.items():
            versions.sort(key=lambda v: v[0])
            ranks[key] = [rank for rank, _ in versions]
        rows = {}
        for txn_id, ((t, _, _), txn) in self.transactions.items():
            key = txn["customer_id"]
            at = bisect.bisect_right(ranks.get(key, []), (t, *_AFTER))
            profile = self.versions[key][at - 1][1] if at else None
            country, name = profile if profile is not None else (None, None)
            suspicious = country is None or country != txn["country"]
            rows[txn_id] = (key, cents(txn["amount"]), txn["country"], country, name, suspicious)
        return rows


class SpendReference(Reference):
    def __init__(self) -> None:
        super().__init__()
        self.windows: dict[tuple[str, int], list[int]] = {}

    def _apply(self, record: Record, offset: int, value: Any, t: int) -> None:
        amount = cents(value["amount"])
        key = (record.key, t - t % WINDOW_MS)
        window = self.windows.get(key)
        if window is None:
            self.windows[key] = [1, amount, amount]
        else:
            window[0] += 1
            window[1] += amount
            window[2] = max(window[2], amount)

    def table(self) -> dict[Any, tuple]:
        return {key: tuple(window) for key, window in self.windows.items()}


class ClicksReference(Reference):
    def __init__(self) -> None:
        super().__init__()
        self.searches: dict[str, list[tuple[tuple[int, int, int], str]]] = {}
        self.clicks: dict[str, tuple[tuple[int, int, int], str]] = {}

    def _apply(self, record: Record, offset: int, value: Any, t: int) -> None:
        rank = (t, record.partition, offset)
        if record.key.startswith(CLOSING_PREFIX):
            return
        if record.topic == "searches":
            self.searches.setdefault(record.key, []).append((rank, value["query"]))
        elif value["click_id"] not in self.clicks or self.clicks[value["click_id"]][0] < rank:
            self.clicks[value["click_id"]] = (rank, record.key)

    def table(self) -> dict[Any, tuple]:
        ranks: dict[str, list[tuple[int, int, int]]] = {}
        for user, searches in self.searches.items():
            searches.sort(key=lambda s: s[0])
            ranks[user] = [rank for rank, _ in searches]
        rows = {}
        for click_id, ((t, _, _), user) in self.clicks.items():
            at = bisect.bisect_right(ranks.get(user, []), (t, *_AFTER))
            query = None
            if at and ranks[user][at - 1][0] >= t - WITHIN_MS:
                query = self.searches[user][at - 1][1]
            rows[click_id] = (user, query)
        return rows


REFERENCES: dict[str, type[Reference]] = {
    "latest": LatestReference,
    "fraud": FraudReference,
    "spend": SpendReference,
    "clicks": ClicksReference,
}


def reference_for(workload: str) -> Reference:
    return REFERENCES[workload]()
