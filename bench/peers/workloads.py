"""The four workloads' events: deterministic, on the topics and value schemas the platform's
pipelines read (pipelines/topics.py), with the event time also as the Kafka record timestamp.

Kafka Streams and Quix Streams take event time from the record timestamp; the platform from the
value's field (``updated_at`` or ``ts``). Writing both the same lets every engine see one time.
Each record names its partition (a CRC32 of the key, the same function for every topic), so the
two topics of a join are co-partitioned, which Kafka Streams and Quix Streams require.

A workload yields its next record for a nominal event time: the backlog's clock advances by the
workload's step, the fixed-rate phase uses the wall clock. :class:`Disorder` moves a share of the
records back in event time: within the grace period (out of order) or beyond it (late).
"""

from __future__ import annotations

import json
import random
import zlib
from dataclasses import dataclass, field
from typing import ClassVar

PARTITIONS = 4
BASE_TS = 1_700_000_000_000
MINUTE = 60_000
GRACE_MS = 10 * MINUTE  # the platform's default grace (README, Streaming semantics)
WITHIN_MS = 10 * MINUTE  # the click-search join's bound
COUNTRIES = ("DE", "FR", "NL", "PL", "ES")


@dataclass(frozen=True, slots=True)
class Record:
    topic: str
    partition: int
    key: str
    value: bytes | None  # None: a tombstone
    ts: int  # event time in ms, also the record's timestamp


def partition_of(key: str) -> int:
    return zlib.crc32(key.encode()) % PARTITIONS


@dataclass(frozen=True)
class Disorder:
    """Shares of records moved back in event time: ``within`` by 1 s to 5 min (inside the
    10-minute grace, so every engine still applies them), ``late`` by 15 to 30 min (beyond it)."""

    within: float = 0.05
    late: float = 0.0

    def shift(self, ts: int, rng: random.Random) -> int:
        draw = rng.random()
        if draw < self.late:
            return ts - rng.randrange(15 * MINUTE, 30 * MINUTE)
        if draw < self.late + self.within:
            return ts - rng.randrange(1_000, 5 * MINUTE)
        return ts


IN_ORDER = Disorder(within=0.0, late=0.0)
WITHIN_GRACE = Disorder(within=0.05, late=0.0)
WITH_LATE = Disorder(within=0.05, late=0.005)


def backlog_disorder(workload: str) -> Disorder:
    """A benchmark backlog's disorder: the windows see records out of order within grace; the
    joins an in-order log, on which processing-time and event-time joins agree."""
    return WITHIN_GRACE if workload == "spend" else IN_ORDER


@dataclass
class Workload:
    """One workload's event sequence; ``next(ts)`` gives its next record."""

    name: ClassVar[str]
    pipeline: ClassVar[str]  # the platform's pipeline that computes it
    topics: ClassVar[tuple[str, ...]]
    step_ms: ClassVar[int]  # the backlog's clock: nominal event-time step per record
    description: ClassVar[str]

    keys: int
    seed: int = 1
    disorder: Disorder = IN_ORDER
    produced: int = 0
    rate_phase: bool = False  # the fixed-rate phase (see each workload's mix)
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.name}-{self.seed}")

    @property
    def history(self) -> int:
        """Records written before an engine starts in a fixed-rate run (a table to join with)."""
        return 0

    def next(self, ts: int) -> Record:
        record = self._next(self.produced, self.disorder.shift(ts, self.rng))
        self.produced += 1
        return record

    def _next(self, i: int, ts: int) -> Record:
        raise NotImplementedError

    def closing(self, last_ts: int) -> list[Record]:
        """Records appended after the measured ones, which outputs may wait for."""
        return []

    def _record(self, topic: str, key: str, value: dict | None, ts: int) -> Record:
        data = None if value is None else json.dumps(value, separators=(",", ":")).encode()
        return Record(topic, partition_of(key), key, data, ts)


def _amount(rng: random.Random) -> float:
    """A price with cents, written as a JSON number (the topics' ``decimal(18,2)``)."""
    cents = rng.randrange(100, 100_000)
    return float(f"{cents // 100}.{cents % 100:02d}")


class LatestPerKey(Workload):
    name = "latest"
    pipeline = "customers"
    topics = ("customers",)
    step_ms = 1
    description = "latest per key: a customers changelog (1% tombstones) as a table"

    def _next(self, i: int, ts: int) -> Record:
        cid = f"c{self.rng.randrange(self.keys):07d}"
        if self.rng.random() < 0.01:
            return self._record("customers", cid, None, ts)
        value = {
            "customer_id": cid,
            "name": f"name {i % 997}",
            "email": f"{cid}@example.com",
            "country": "DE",
            "updated_at": ts,
        }
        return self._record("customers", cid, value, ts)


@dataclass
class FraudJoin(Workload):
    """Every customer is created first (the ``history``); then 10% customer changes (2% of them
    deletes) among transactions, 90% of which come from the customer's country."""

    name = "fraud"
    pipeline = "transactions_enriched"
    topics = ("customers", "transactions")
    step_ms = 10
    description = "fraud join: transactions with their customer as of their time (stream-table)"
    countries: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def history(self) -> int:
        return self.keys

    def _next(self, i: int, ts: int) -> Record:
        rng = self.rng
        if i < self.keys:
            return self._customer(f"c{i:07d}", i, ts)
        cid = f"c{rng.randrange(self.keys):07d}"
        # The fixed-rate phase writes transactions only: a customer change in the same
        # millisecond as a transaction would be a tie that processing order decides.
        if not self.rate_phase and rng.random() < 0.1:
            if rng.random() < 0.02:
                self.countries.pop(cid, None)
                return self._record("customers", cid, None, ts)
            return self._customer(cid, i, ts)
        home = self.countries.get(cid)
        country = home if home is not None and rng.random() < 0.9 else rng.choice(COUNTRIES)
        value = {
            "txn_id": f"t{i:09d}",
            "customer_id": cid,
            "amount": _amount(rng),
            "currency": "EUR",
            "country": country,
            "ts": ts,
        }
        return self._record("transactions", cid, value, ts)

    def _customer(self, cid: str, i: int, ts: int) -> Record:
        country = self.rng.choice(COUNTRIES)
        self.countries[cid] = country
        value = {
            "customer_id": cid,
            "name": f"name {i % 997}",
            "email": f"{cid}@example.com",
            "country": country,
            "updated_at": ts,
        }
        return self._record("customers", cid, value, ts)


class HourlySpend(Workload):
    name = "spend"
    pipeline = "spend_hourly"
    topics = ("transactions",)
    step_ms = 100
    description = "hourly spend: per customer and 1-hour window (grace 10 min) count, sum, max"

    def _next(self, i: int, ts: int) -> Record:
        cid = f"c{self.rng.randrange(self.keys):07d}"
        value = {
            "txn_id": f"t{i:09d}",
            "customer_id": cid,
            "amount": _amount(self.rng),
            "currency": "EUR",
            "country": "DE",
            "ts": ts,
        }
        return self._record("transactions", cid, value, ts)


class ClickSearch(Workload):
    """30% searches, 70% clicks. Closing records (a search and a click per partition, 21
    minutes later) move every partition's event time past the last windows and their grace:
    Kafka Streams and Spark emit a click without a match only once its window has closed. (Not
    later: the broker refuses timestamps more than an hour ahead of its clock.)"""

    name = "clicks"
    pipeline = "clicks_last_search"
    topics = ("searches", "clicks")
    step_ms = 50
    description = "click-search join: each click with the user's latest search in 10 min before"

    def _next(self, i: int, ts: int) -> Record:
        user = f"u{self.rng.randrange(self.keys):06d}"
        if self.rng.random() < 0.3:
            value = {"user_id": user, "query": f"q{self.rng.randrange(1000)}", "ts": ts}
            return self._record("searches", user, value, ts)
        value = {
            "click_id": f"k{i:09d}",
            "user_id": user,
            "url": f"/p/{self.rng.randrange(100)}",
            "ts": ts,
        }
        return self._record("clicks", user, value, ts)

    def closing(self, last_ts: int) -> list[Record]:
        at = last_ts + WITHIN_MS + GRACE_MS + MINUTE
        records = []
        for p in range(PARTITIONS):
            user = f"{CLOSING_PREFIX}{p}"
            search = {"user_id": user, "query": "closing", "ts": at}
            click = {"click_id": f"{CLOSING_PREFIX}{p}", "user_id": user, "url": "/", "ts": at}
            for topic, value in (("searches", search), ("clicks", click)):
                data = json.dumps(value, separators=(",", ":")).encode()
                records.append(Record(topic, p, user, data, at))
        return records


CLOSING_PREFIX = "~closing-"  # keys of closing records; no comparison looks at them
WORKLOADS: dict[str, type[Workload]] = {
    w.name: w for w in (LatestPerKey, FraudJoin, HourlySpend, ClickSearch)
}


def make(name: str, keys: int, seed: int = 1, disorder: Disorder = IN_ORDER) -> Workload:
    """The workload ``name``; ``keys`` customers (latest, fraud) or a tenth as many customers or
    users (spend, clicks: so a window or a user sees several events)."""
    cls = WORKLOADS[name]
    scaled = keys if name in ("latest", "fraud") else max(1, keys // 10)
    return cls(keys=scaled, seed=seed, disorder=disorder)
