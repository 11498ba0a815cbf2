"""Producing known record sequences for tests, with batching producers (linger), as a real
application sends them."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from confluent_kafka import Producer

from streaming.kafka.admin import ensure_topics
from streaming.settings import Settings


@dataclass(frozen=True)
class Out:
    topic: str
    key: bytes | None
    value: bytes | None
    partition: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] | None = None
    timestamp: int | None = None  # the record timestamp (epoch ms); None: the producer's clock


def send(
    settings: Settings, records: Iterable[Out], linger_ms: int = 50, batch_records: int = 500
) -> int:
    """Produce ``records`` (creating their topics) and wait until all are delivered.

    ``batch_records`` 1 with ``linger_ms`` 0 writes every record as its own record batch.
    """
    topics = sorted({r.topic for r in records} if isinstance(records, Sequence) else set())
    if topics:
        ensure_topics(settings, topics)
    producer = Producer(
        {
            **settings.kafka.client_config(),
            "linger.ms": str(linger_ms),
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
            "batch.num.messages": batch_records,
        }
    )
    errors: list[str] = []
    count = 0
    for r in records:
        kwargs: dict[str, object] = {} if r.partition is None else {"partition": r.partition}
        if r.headers is not None:
            kwargs["headers"] = list(r.headers)
        if r.timestamp is not None:
            kwargs["timestamp"] = r.timestamp
        while True:
            try:
                producer.produce(
                    r.topic,
                    key=r.key,
                    value=r.value,
                    on_delivery=lambda e, m: errors.append(str(e)) if e else None,
                    **kwargs,
                )
                break
            except BufferError:
                producer.poll(0.05)
        count += 1
    assert producer.flush(30) == 0
    assert not errors, errors[:3]
    return count


def customer_changes(
    n: int, seed: int, keys: int = 300, start_ms: int = 1_700_000_000_000
) -> list[Out]:
    """Updates, tombstones and re-creations of ``keys`` customers, spread over all partitions."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        cid = f"k{rng.randrange(keys):05d}"
        if rng.random() < 0.1:
            out.append(Out("customers", cid.encode(), None))
            continue
        value = {
            "customer_id": cid,
            "name": f"name-{i}",
            "email": f"{cid}.{i}@example.com",
            "country": rng.choice(["DE", "FR", "US"]),
            "updated_at": start_ms + i,
        }
        out.append(Out("customers", cid.encode(), json.dumps(value).encode()))
    return out


def transactions(
    n: int, seed: int, keys: int = 200, start_ms: int = 1_700_000_000_000
) -> list[Out]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        cid = f"k{rng.randrange(keys):05d}"
        value = {
            "txn_id": f"t{seed}-{i}",
            "customer_id": cid,
            "amount": round(rng.uniform(0.01, 500), 2),
            "currency": "EUR",
            "country": "DE",
            "ts": start_ms + rng.randrange(10**6),
        }
        out.append(Out("transactions", cid.encode(), json.dumps(value).encode()))
    return out


def fraud_events(
    n: int, seed: int, customers: int = 40, start_ms: int = 1_700_000_000_000, step_ms: int = 1000
) -> list[Out]:
    """Customer changes (tombstones included) and transactions, one per second of event time,
    each record's timestamp its event time; about 6% arrive up to 9 minutes out of order (within
    a 10-minute grace) and 1.5% 15-30 minutes out of order (late)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = _shifted(rng, start_ms + i * step_ms)
        cid = f"c{rng.randrange(customers):03d}"
        country = rng.choice(["DE", "FR", "US"])
        if rng.random() < 0.3:
            if rng.random() < 0.1:
                out.append(Out("customers", cid.encode(), None, timestamp=t))
                continue
            value = {
                "customer_id": cid,
                "name": f"name-{i}",
                "email": f"{cid}.{i}@example.com",
                "country": country,
                "updated_at": t,
            }
        else:
            value = _transaction(rng, f"t{seed}-{i}", cid, country, t)
        topic = "customers" if "updated_at" in value else "transactions"
        out.append(Out(topic, cid.encode(), json.dumps(value).encode(), timestamp=t))
    return out


def payments(
    n: int, seed: int, customers: int = 30, start_ms: int = 1_700_000_000_000, step_ms: int = 1000
) -> list[Out]:
    """Transactions of ``customers`` customers keyed by customer, one per ``step_ms`` of event
    time, each record's timestamp its event time, out of order as :func:`_shifted` says. Each
    customer pays mostly from a home country (in the EU or not), sometimes from another EU
    country, and now and then from abroad."""
    rng = random.Random(seed)
    homes = ["DE", "FR", "IT", "US", "GB"]
    abroad = ["AU", "US", "BR", "JP", "DE", "ES"]
    home = {f"p{c:03d}": rng.choice(homes) for c in range(customers)}
    out = []
    for i in range(n):
        t = _shifted(rng, start_ms + i * step_ms)
        cid = f"p{rng.randrange(customers):03d}"
        draw = rng.random()
        country = home[cid] if draw < 0.75 else rng.choice(["PT", "NL"] if draw < 0.85 else abroad)
        value = _transaction(rng, f"t{seed}-{i}", cid, country, t)
        out.append(Out("transactions", cid.encode(), json.dumps(value).encode(), timestamp=t))
    return out


def _transaction(rng: random.Random, txn_id: str, cid: str, country: str, ts: int) -> dict:
    """A transaction's value, its amount drawn from ``rng``."""
    amount = round(rng.uniform(0.01, 500), 2)
    return {
        "txn_id": txn_id,
        "customer_id": cid,
        "amount": amount,
        "currency": "EUR",
        "country": country,
        "ts": ts,
    }


def clickstream(n: int, seed: int, users: int = 30, start_ms: int = 1_700_000_000_000) -> list[Out]:
    """Searches (40%) and clicks of ``users`` users, one event per 20 s of event time, keyed
    by user, each record's timestamp its event time; out of order as :func:`fraud_events`."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = _shifted(rng, start_ms + i * 20_000)
        user = f"u{rng.randrange(users):03d}"
        if rng.random() < 0.4:
            value = {"user_id": user, "query": f"q{rng.randrange(50)}", "ts": t}
            topic = "searches"
        else:
            value = {"click_id": f"k{seed}-{i}", "user_id": user, "url": f"/p/{i}", "ts": t}
            topic = "clicks"
        out.append(Out(topic, user.encode(), json.dumps(value).encode(), timestamp=t))
    return out


def clickstream_with_profiles(
    n: int, seed: int, users: int = 30, start_ms: int = 1_700_000_000_000, step_ms: int = 5_000
) -> list[Out]:
    """``n`` groups of events of ``users`` users, one group per ``step_ms`` of event time, keyed
    by user, each record's timestamp its event time; whole groups out of order as
    :func:`_shifted` says. A group is a profile update (15%) or a click with 0 to 3 searches of
    the same user before it, sent in shuffled order. A search is at the click's millisecond, 1 s
    before it (both within the second), 1 ms too early, or anywhere between. A tenth of the
    profile updates are deletions; a fifth of them are at the user's previous click's event
    time, and a tenth come twice at one event time (the later offset wins)."""
    rng = random.Random(seed)
    out: list[Out] = []
    last_click: dict[str, int] = {}
    for i in range(n):
        t = _shifted(rng, start_ms + i * step_ms)
        user = f"u{rng.randrange(users):03d}"
        key = user.encode()
        if rng.random() < 0.15:
            if rng.random() < 0.2:
                t = last_click.get(user, t)
            for _ in range(2 if rng.random() < 0.1 else 1):
                value = None
                if rng.random() >= 0.1:
                    profile = {"user_id": user, "age": rng.randrange(16, 90), "updated_at": t}
                    profile.update(gender=rng.choice("fmx"), zip_code=f"{rng.randrange(99):05d}")
                    value = json.dumps(profile).encode()
                out.append(Out("profiles", key, value, timestamp=t))
            continue
        group = []
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            at = t - rng.choice((0, 1_000, 1_001, rng.randrange(1, 1_000), rng.randrange(1, 1_000)))
            search = {"user_id": user, "query": f"q{rng.randrange(50)}", "ts": at}
            group.append(Out("searches", key, json.dumps(search).encode(), timestamp=at))
        click = {"click_id": f"k{seed}-{i}", "user_id": user, "url": f"/p/{i}", "ts": t}
        group.append(Out("clicks", key, json.dumps(click).encode(), timestamp=t))
        last_click[user] = t
        rng.shuffle(group)
        out += group
    return out


def _shifted(rng: random.Random, t: int) -> int:
    """About 6% of events up to 9 minutes out of order (within a 10-minute grace), 1.5% 15-30
    minutes (late)."""
    draw = rng.random()
    if draw < 0.06:
        return t - rng.randrange(1_000, 540_000)
    if draw < 0.075:
        return t - rng.randrange(900_000, 1_800_000)
    return t


# Kafka's default partitioner puts these keys on partitions 1, 2, 0, 3 and 1 of four, so every
# partition has trades (a window is final only once every partition's stream time passed it).
TICKERS = ("ACME", "GLOBX", "HOOLI", "OSCORP", "WAYNE")


def trade_events(
    n: int,
    seed: int,
    start_ms: int = 1_700_000_000_000,
    step_ms: int = 4_000,
    late_burst_at: int | None = None,
    block_share: float = 0.0,
) -> list[Out]:
    """Trades of :data:`TICKERS` keyed by ticker, one per ``step_ms`` of event time, out of
    order as :func:`_shifted` says; at index ``late_burst_at`` a burst of 20 trades two hours
    old (a producer coming back from an outage). A ``block_share`` of them are block trades of
    1,000 to 5,000 shares."""
    rng = random.Random(seed)
    prices = {ticker: Decimal(20 + 15 * k) for k, ticker in enumerate(TICKERS)}
    out = []

    def trade(i: int, t: int, suffix: str = "") -> Out:
        ticker = rng.choice(sorted(prices))
        step = Decimal(rng.randrange(-150, 151)) / Decimal(10_000)
        prices[ticker] = max(Decimal(1), (prices[ticker] + step).quantize(Decimal("0.0001")))
        value = {
            "trade_id": f"x{seed}-{i}{suffix}",
            "ticker": ticker,
            "price": float(prices[ticker]),
            "size": _size(rng, block_share),
            "ts": t,
        }
        return Out("trades", ticker.encode(), json.dumps(value).encode(), timestamp=t)

    for i in range(n):
        t = start_ms + i * step_ms
        out.append(trade(i, _shifted(rng, t)))
        if i == late_burst_at:
            out += [trade(i, t - 7_200_000 + 200 * j, f"-late{j}") for j in range(20)]
    return out


def _size(rng: random.Random, block_share: float) -> int:
    """A trade's size: a block trade's with probability ``block_share`` (drawn only when some
    are: the sequence of other trades stays the same)."""
    if block_share and rng.random() < block_share:
        return rng.randrange(1_000, 5_000)
    return rng.randrange(1, 400)
