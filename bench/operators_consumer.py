"""The hand-rolled baseline as a user would deploy it: one Python process that consumes the
workload's topics from the broker (confluent-kafka), decodes each JSON value and feeds the
matching :mod:`bench.operators_baseline` implementation, batch by batch.

The adapters turn a peers workload's record (``bench/peers/workloads.py``) into the baseline's
tuple (input, partition, offset, time, id, key, amount_cents, label). The baseline's output is
read in the shape of the peers' reference (``bench/peers/reference.py``), with the columns it
computes: the fraud join has no customer name or flag, only the customer's country.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from bench import operators_baseline as baseline
from bench.peers.outputs import closing_key
from bench.peers.reference import WINDOW_MS
from bench.peers.workloads import GRACE_MS, WITHIN_MS

POLL_BATCH = 10_000  # records per consume() call, each one baseline step
POLL_TIMEOUT_S = 1.0
IDLE_LIMIT_S = 60.0  # no record for this long before the log's end: the run fails

Adapter = Callable[[str, int, int, bytes, bytes | None, int], tuple]


def _cents(amount: float) -> int:
    return round(amount * 100)


def _fraud(topic: str, p: int, o: int, key: bytes, value: bytes | None, ts: int) -> tuple:
    if topic == "customers":
        if value is None:  # a tombstone: a version with no country, at the record's time
            return (1, p, o, ts, "", key.decode(), 0, None)
        row = json.loads(value)
        return (1, p, o, row["updated_at"], "", row["customer_id"], 0, row["country"])
    row = json.loads(value)  # type: ignore[arg-type]
    amount = _cents(row["amount"])
    return (0, p, o, row["ts"], row["txn_id"], row["customer_id"], amount, row["country"])


def _spend(topic: str, p: int, o: int, key: bytes, value: bytes | None, ts: int) -> tuple:
    row = json.loads(value)  # type: ignore[arg-type]
    return (0, p, o, row["ts"], row["txn_id"], row["customer_id"], _cents(row["amount"]), None)


def _clicks(topic: str, p: int, o: int, key: bytes, value: bytes | None, ts: int) -> tuple:
    row = json.loads(value)  # type: ignore[arg-type]
    if topic == "searches":
        return (1, p, o, row["ts"], "", row["user_id"], 0, row["query"])
    return (0, p, o, row["ts"], row["click_id"], row["user_id"], 0, None)


@dataclass(frozen=True)
class Case:
    """How one workload runs through its baseline and reads back as the reference's table."""

    adapt: Adapter
    make: Callable[[int], Any]  # partitions -> a baseline implementation
    row: Callable[[Any, tuple], tuple[Any, tuple]]  # (output key, baseline row) -> compared
    project: Callable[[tuple], tuple]  # a reference row -> the columns the baseline computes


CASES: dict[str, Case] = {
    "fraud": Case(
        _fraud,
        lambda n: baseline.AsOfJoinBaseline(n, GRACE_MS, GRACE_MS),
        lambda txn, r: (txn, (r[3], r[4], r[5], r[6])),
        lambda ref: ref[:4],
    ),
    "spend": Case(
        _spend,
        lambda n: baseline.WindowBaseline(n, GRACE_MS, WINDOW_MS),
        lambda window, r: (window, r),
        lambda ref: ref,
    ),
    "clicks": Case(
        _clicks,
        lambda n: baseline.IntervalJoinBaseline(n, GRACE_MS, WITHIN_MS, GRACE_MS),
        lambda click, r: (click, (r[3], r[4])),
        lambda ref: ref,
    ),
}


def expected(workload: str, reference: dict[Any, tuple]) -> dict[Any, tuple]:
    """The reference's table restricted to the columns the baseline computes."""
    project = CASES[workload].project
    return {key: project(row) for key, row in reference.items()}


def run(
    workload: str, bootstrap: str, ends: dict[tuple[str, int], int], partitions: int
) -> dict[str, Any]:
    """Consume the log up to ``ends`` ((topic, partition) -> end offset) from offset 0 through
    the workload's baseline; seconds from the first poll to the last record processed, events
    and the output table (closing records' keys left out, as the reference does)."""
    case = CASES[workload]
    impl = case.make(partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"operators-baseline-{workload}-{time.time_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    consumer.assign([TopicPartition(t, p, 0) for (t, p), end in ends.items() if end > 0])
    left = {where: end for where, end in ends.items() if end > 0}
    total = sum(left.values())
    table: dict[Any, tuple] = {}
    events = 0
    adapt = case.adapt
    try:
        started = last = time.perf_counter()
        while left:
            # consume() waits for as many records as asked or the timeout: never more than the
            # log still holds, or the last call would wait out the timeout.
            messages = consumer.consume(min(POLL_BATCH, total - events), POLL_TIMEOUT_S)
            if not messages:
                if time.perf_counter() - last > IDLE_LIMIT_S:
                    msg = f"the baseline saw no record for {IDLE_LIMIT_S:g} s; missing {left}"
                    raise RuntimeError(msg)
                continue
            records = []
            for m in messages:
                if m.error() is not None:
                    raise KafkaException(m.error())
                topic, p, o = m.topic(), m.partition(), m.offset()
                records.append(adapt(topic, p, o, m.key(), m.value(), m.timestamp()[1]))
                if o + 1 >= left.get((topic, p), 0):
                    left.pop((topic, p), None)
            table.update(impl.process(records))
            events += len(records)
            last = time.perf_counter()
        seconds = last - started
    finally:
        consumer.close()
    rows = dict(case.row(key, row) for key, row in table.items())
    return {
        "seconds": seconds,
        "events": events,
        "events_per_s": events / seconds if seconds else None,
        "late": impl.clock.late,
        "table": {k: v for k, v in rows.items() if not closing_key(k)},
    }
