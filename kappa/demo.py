"""The demo domain, the seeds' example applications: customer profiles and transactions (fraud
detection), shop users' profiles, searches and clicks (click-stream enrichment), and stock trades.

:func:`events` is a pure, deterministic generator: the same seed and start time give the same
events. :func:`produce` sends them to Kafka, optionally at a fixed rate.
"""

from __future__ import annotations

import heapq
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Producer

from streaming.kafka.admin import ensure_topics
from streaming.kafka.log import CLIENT_LOGGER
from streaming.settings import Settings

CUSTOMERS_TOPIC = "customers"
TRANSACTIONS_TOPIC = "transactions"
SEARCHES_TOPIC = "searches"
CLICKS_TOPIC = "clicks"
PROFILES_TOPIC = "profiles"
TRADES_TOPIC = "trades"
TOPICS = (
    CUSTOMERS_TOPIC,
    TRANSACTIONS_TOPIC,
    SEARCHES_TOPIC,
    CLICKS_TOPIC,
    PROFILES_TOPIC,
    TRADES_TOPIC,
)
# Two tickers per partition of a 4-partition topic (Kafka's murmur2 of the key): a window is final
# once every partition's stream time passed it, so no partition may stay without trades.
TICKERS = ("ACME", "BLUTH", "GLOBX", "HOOLI", "OSCORP", "SOYL", "STARK", "WAYNE")
TWO_HOURS_MS = 7_200_000
# A paced producer sends what is due, then waits once it is this far ahead of its rate.
PACE_TICK_S = 0.05
GENDERS = ("f", "m", "x")
ZIP_CODES = tuple(f"{10_000 + 2_371 * n:05d}" for n in range(40))
QUERIES = ("running shoes", "laptop", "coffee grinder", "tent", "headphones", "desk lamp")
COUNTRIES = ("DE", "FR", "NL", "ES", "IT", "PL", "SE", "GB", "US", "CA", "BR", "JP", "IN", "AU")
CURRENCIES = {
    "DE": "EUR",
    "FR": "EUR",
    "NL": "EUR",
    "ES": "EUR",
    "IT": "EUR",
    "PL": "PLN",
    "SE": "SEK",
    "GB": "GBP",
    "US": "USD",
    "CA": "CAD",
    "BR": "BRL",
    "JP": "JPY",
    "IN": "INR",
    "AU": "AUD",
}
FIRST = (
    "Ada",
    "Alan",
    "Grace",
    "Linus",
    "Barbara",
    "Edsger",
    "Donald",
    "Frances",
    "Ken",
    "Margaret",
    "Dennis",
    "Radia",
    "John",
    "Hedy",
    "Tim",
    "Katherine",
)
LAST = (
    "Lovelace",
    "Turing",
    "Hopper",
    "Torvalds",
    "Liskov",
    "Dijkstra",
    "Knuth",
    "Allen",
    "Thompson",
    "Hamilton",
    "Ritchie",
    "Perlman",
    "McCarthy",
    "Lamarr",
    "Berners-Lee",
)


@dataclass(frozen=True)
class Event:
    topic: str
    key: str
    value: bytes | None
    timestamp: int | None = None  # the record timestamp: the event's time (epoch ms)


def events(
    seed: int = 42,
    customers: int = 1000,
    start_ms: int | None = None,
    step_ms: int = 10,
    tombstone_rate: float = 0.02,
    profile_share: float = 0.3,
    out_of_order: float = 0.05,
    beyond_grace: float = 0.005,
    clickstream_share: float = 0.2,
    trade_share: float = 0.1,
    late_burst_rate: float = 0.0005,
) -> Iterator[Event]:
    """An endless, deterministic stream of profile updates, deletions and transactions.

    Event times advance by ``step_ms``; a share ``out_of_order`` of events is 1 s to 5 min older
    (a late delivery within the pipelines' 10-minute grace) and a share ``beyond_grace`` 15 to 30
    minutes older (late: dead-lettered by the stateful pipelines). Every record's timestamp is its
    event time. A share ``clickstream_share`` are searches and clicks of shop users, with their
    profiles and the clicks that follow searches (:class:`_Shop`). Besides,
    with ``trade_share`` per step a stock trade (its own random stream, so the other events do
    not depend on it), and with ``late_burst_rate`` per trade a burst of 20 trades two hours old
    after it (a producer coming back from an outage).
    """
    rng = random.Random(seed)
    market = _Market(random.Random(f"trades-{seed}"), seed)
    shop = _Shop(random.Random(f"shop-{seed}"), seed)
    now = int(time.time() * 1000) if start_ms is None else start_ms
    home: dict[str, str] = {}
    i = 0
    while True:
        ts = now + i * step_ms
        i += 1
        yield from shop.due(ts)
        yield from market.step(i, ts, trade_share, late_burst_rate, out_of_order, beyond_grace)
        delay = rng.random()
        if delay < out_of_order:
            ts -= rng.randrange(1_000, 300_000)
        elif delay < out_of_order + beyond_grace:
            ts -= rng.randrange(900_000, 1_800_000)
        if rng.random() < clickstream_share:
            yield from shop.around(_clickstream(rng, i, ts, seed), i)
            continue
        cid = f"c{rng.randrange(customers):06d}"
        if rng.random() < profile_share or cid not in home:
            if cid in home and rng.random() < tombstone_rate / profile_share:
                del home[cid]
                yield Event(CUSTOMERS_TOPIC, cid, None, ts)
                continue
            home[cid] = rng.choice(COUNTRIES)
            first, last = rng.choice(FIRST), rng.choice(LAST)
            profile = {
                "customer_id": cid,
                "name": f"{first} {last}",
                "email": f"{first}.{last}.{cid}@example.com".lower(),
                "country": home[cid],
                "updated_at": ts,
            }
            yield Event(CUSTOMERS_TOPIC, cid, _json(profile), ts)
            continue
        country = home[cid] if rng.random() < 0.9 else rng.choice(COUNTRIES)
        txn = {
            "txn_id": f"t{seed}-{i:010d}",
            "customer_id": cid,
            "amount": round(rng.lognormvariate(3.0, 1.0), 2),
            "currency": CURRENCIES[country],
            "country": country,
            "ts": ts,
        }
        yield Event(TRANSACTIONS_TOPIC, cid, _json(txn), ts)


def _clickstream(rng: random.Random, i: int, ts: int, seed: int) -> Event:
    """A search (40%) or a click (60%) of one of 500 users."""
    user = f"u{rng.randrange(500):04d}"
    if rng.random() < 0.4:
        search = {"user_id": user, "query": rng.choice(QUERIES), "ts": ts}
        return Event(SEARCHES_TOPIC, user, _json(search), ts)
    click = {"click_id": f"k{seed}-{i:010d}", "user_id": user, "ts": ts}
    click["url"] = f"https://shop.example/p/{rng.randrange(1000)}"
    return Event(CLICKS_TOPIC, user, _json(click), ts)


class _Shop:
    """What surrounds the shop users' searches and clicks, from its own random stream (so the
    other events do not depend on it): a user's profile when first seen, now and then a new
    version (a fifth of them 1 s to 5 min out of order) or a deletion, and after half the
    searches a click on a result within the second, sent once its event time comes."""

    def __init__(self, rng: random.Random, seed: int) -> None:
        self.rng, self.seed = rng, seed
        self.profiled: set[str] = set()
        self.follow_ups: list[tuple[int, int, Event]] = []  # (event time, step, click)

    def due(self, now: int) -> Iterator[Event]:
        while self.follow_ups and self.follow_ups[0][0] <= now:
            yield heapq.heappop(self.follow_ups)[2]

    def around(self, event: Event, i: int) -> Iterator[Event]:
        rng, user, ts = self.rng, event.key, event.timestamp or 0
        draw = rng.random()
        if user not in self.profiled:
            self.profiled.add(user)
            yield self._profile(user, ts)
        elif draw < 0.005:
            self.profiled.discard(user)
            yield Event(PROFILES_TOPIC, user, None, ts)
        elif draw < 0.04:
            late = rng.random() < 0.2
            yield self._profile(user, ts - rng.randrange(1_000, 300_000) if late else ts)
        yield event
        if event.topic == SEARCHES_TOPIC and rng.random() < 0.5:
            at = ts + rng.randrange(1_000)
            click = {"click_id": f"k{self.seed}-{i:010d}r", "user_id": user, "ts": at}
            click["url"] = f"https://shop.example/p/{rng.randrange(1000)}"
            heapq.heappush(self.follow_ups, (at, i, Event(CLICKS_TOPIC, user, _json(click), at)))

    def _profile(self, user: str, ts: int) -> Event:
        rng = self.rng
        profile = {
            "user_id": user,
            "age": rng.randrange(16, 90),
            "gender": rng.choice(GENDERS),
            "zip_code": rng.choice(ZIP_CODES),
            "updated_at": ts,
        }
        return Event(PROFILES_TOPIC, user, _json(profile), ts)


class _Market:
    """Trades of :data:`TICKERS`, each price a random walk."""

    def __init__(self, rng: random.Random, seed: int) -> None:
        self.rng, self.seed = rng, seed
        self.prices = {ticker: 20.0 + 30.0 * n for n, ticker in enumerate(TICKERS)}

    def step(
        self, i: int, ts: int, share: float, burst_rate: float, out_of_order: float, late: float
    ) -> Iterator[Event]:
        rng = self.rng
        if rng.random() >= share:
            return
        delay = rng.random()
        if delay < out_of_order:
            yield self.trade(f"{i:010d}", ts - rng.randrange(1_000, 300_000))
        elif delay < out_of_order + late:
            yield self.trade(f"{i:010d}", ts - rng.randrange(900_000, 1_800_000))
        else:
            yield self.trade(f"{i:010d}", ts)
        if rng.random() < burst_rate:
            for j in range(20):
                yield self.trade(f"{i:010d}-late{j:02d}", ts - TWO_HOURS_MS + j * 150)

    def trade(self, suffix: str, ts: int) -> Event:
        rng = self.rng
        ticker = rng.choice(TICKERS)
        self.prices[ticker] = max(1.0, self.prices[ticker] * (1 + rng.gauss(0, 0.002)))
        trade = {
            "trade_id": f"x{self.seed}-{suffix}",
            "ticker": ticker,
            "price": round(self.prices[ticker], 4),
            "size": rng.randrange(1, 500),
            "ts": ts,
        }
        return Event(TRADES_TOPIC, ticker, _json(trade), ts)


def _json(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def producer_config(settings: Settings) -> dict[str, Any]:
    """Idempotent, acknowledged by every in-sync replica, batched by time and size
    (``settings.producer``)."""
    linger_ms = settings.producer.linger_ms
    return {
        **settings.kafka.client_config(),
        "enable.idempotence": "true",
        "acks": "all",
        "linger.ms": str(linger_ms),
        "batch.size": str(settings.producer.batch_bytes),
        "partitioner": "murmur2_random",
        "message.timeout.ms": str(30_000 + linger_ms),
        "logger": CLIENT_LOGGER,
    }


def produce(
    settings: Settings,
    count: int | None = None,
    rate: float | None = None,
    seed: int = 42,
    should_stop: Callable[[], bool] = lambda: False,
    source: Iterator[Event] | None = None,
    pace_tick_s: float = PACE_TICK_S,
) -> int:
    """Send ``count`` demo events (forever when None) at ``rate`` events/s (unlimited when None),
    a burst at a time: what is due is sent, then the producer waits once it is ``pace_tick_s``
    ahead (0: a wait after every event).

    Returns the number of events delivered. Raises if any delivery failed.
    """
    ensure_topics(settings, list(TOPICS))
    producer = Producer(producer_config(settings))
    failures: list[str] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    stream = source or events(seed=seed)
    sent = 0
    started = time.monotonic()
    try:
        for event in stream:
            if (count is not None and sent >= count) or should_stop() or failures:
                break
            while True:
                try:
                    producer.produce(
                        event.topic,
                        key=event.key.encode(),
                        value=event.value,
                        on_delivery=on_delivery,
                        **({} if event.timestamp is None else {"timestamp": event.timestamp}),
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            sent += 1
            if rate:
                # In bursts: a wait after every event wakes the client's threads as often (at
                # 200 events/s, 6 times the producer's CPU; bench/producer_pacing.py).
                ahead = sent / rate - (time.monotonic() - started)
                if ahead > pace_tick_s:
                    while ahead > 0:
                        producer.poll(min(ahead, 0.5))
                        ahead = sent / rate - (time.monotonic() - started)
            elif sent % 10_000 == 0:
                producer.poll(0)
    finally:
        producer.flush(30)
    if failures:
        msg = f"{len(failures)} event(s) were not delivered, first: {failures[0]}"
        raise RuntimeError(msg)
    return sent
