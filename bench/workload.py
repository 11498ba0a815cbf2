"""The benchmark's workload: deterministic customer events, and the table they must produce.

Event ``i`` (counting from 0 over the whole run) has a key drawn from ``keys`` customers and is a
tombstone with probability 1%; otherwise its value is a JSON object of about 110 bytes whose
``updated_at`` is unique (``BASE_TS + i``). A key always lands in the same partition (murmur2)
and the idempotent producer keeps order, so the latest event produced per key is the one with the
highest (partition, offset). :class:`Workload` remembers, per key, the ``updated_at`` of that
event (or that it was deleted): the reference a table is checked against, computed without Kafka,
Spark or Delta.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from confluent_kafka import Producer

TOPIC = "customers"
BASE_TS = 1_700_000_000_000
TOMBSTONE_RATE = 0.01
PRODUCER_CONFIG = {
    "enable.idempotence": True,
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
}


def customer_id(key: int) -> str:
    return f"c{key:07d}"


def event_value(key: int, i: int) -> bytes:
    cid = customer_id(key)
    return (
        f'{{"customer_id":"{cid}","name":"name {i % 997}","email":"{cid}@example.com",'
        f'"country":"DE","updated_at":{BASE_TS + i}}}'
    ).encode()


@dataclass
class Workload:
    """The event sequence of one run, produced in slices, and its reference state."""

    keys: int = 100_000
    seed: int = 1
    produced: int = 0
    expected: dict[str, int] = field(default_factory=dict)  # key -> updated_at of the latest row
    _rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    def next_events(self, count: int) -> Iterator[tuple[bytes, bytes | None]]:
        """The next ``count`` events as (key, value); the reference is updated as they go."""
        keys = self._rng.integers(0, self.keys, count).tolist()
        deletes = (self._rng.random(count) < TOMBSTONE_RATE).tolist()
        for key, delete in zip(keys, deletes, strict=True):
            i = self.produced
            self.produced += 1
            cid = customer_id(key)
            if delete:
                self.expected.pop(cid, None)
                yield cid.encode(), None
            else:
                self.expected[cid] = BASE_TS + i
                yield cid.encode(), event_value(key, i)

    def produce(self, bootstrap: str, count: int) -> float:
        """Produce the next ``count`` events as fast as possible; returns the seconds it took."""
        started = time.perf_counter()
        producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
        for key, value in self.next_events(count):
            produce_one(producer, key, value)
        _flush(producer)
        return time.perf_counter() - started

    def produce_at_rate(
        self,
        bootstrap: str,
        rate: int,
        duration_s: float,
        on_delivery: Callable[[Any, Any], None],
    ) -> int:
        """Produce at ``rate`` events/s for ``duration_s``, in 10 ms ticks; returns the count.

        ``on_delivery(err, msg)`` sees every delivered record (its partition, offset and its
        CreateTime timestamp, set when ``produce`` was called).
        """
        producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, "linger.ms": 2})
        started = time.perf_counter()
        sent = 0
        total = int(rate * duration_s)
        while sent < total:
            due = min(total, int((time.perf_counter() - started) * rate) + 1)
            if due > sent:
                for key, value in self.next_events(due - sent):
                    produce_one(producer, key, value, on_delivery)
                sent = due
            producer.poll(0.005)
        _flush(producer)
        return sent


def produce_one(
    producer: Producer,
    key: bytes | None,
    value: bytes | None,
    on_delivery: Callable[[Any, Any], None] | None = None,
) -> None:
    """Produce one record to the topic, serving delivery reports while the queue is full."""
    while True:
        try:
            if on_delivery is None:
                producer.produce(TOPIC, key=key, value=value)
            else:
                producer.produce(TOPIC, key=key, value=value, on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(0.05)


def _flush(producer: Producer) -> None:
    left = producer.flush(120)
    if left:
        msg = f"{left} benchmark events were not delivered within 120 s"
        raise RuntimeError(msg)
