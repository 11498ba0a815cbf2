"""The fault run's input: customer changes produced at a steady rate, about 1% of them poison.

Every poison record is remembered by its (key, value) bytes, which no clean record can have, so
the harness finds the poison's positions in the log itself (the dead-letter table must hold
those and only those, each with the reason of its kind). The table itself is checked against an
independent replay of the topic.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass

from confluent_kafka import Producer

from bench.workload import TOPIC, produce_one
from streaming.kafka.admin import ensure_topics
from streaming.kafka.log import CLIENT_LOGGER
from streaming.settings import Settings

SCHEMA_REASON = "is not a JSON object matching the schema"


@dataclass(frozen=True)
class PoisonKind:
    name: str
    key: bytes | None
    value: bytes
    reason: str  # a substring of the dead-letter reason


def _customer(cid: str, **fields: object) -> bytes:
    value: dict[str, object] = {
        "customer_id": cid,
        "name": "poison",
        "email": f"{cid}@example.com",
        "country": "DE",
        "updated_at": 1_700_000_000_000,
    }
    value.update(fields)
    return json.dumps({k: v for k, v in value.items() if v is not ...}).encode()


def poison_kinds(cid: str) -> list[PoisonKind]:
    """Malformed records for key ``cid``: each must be dead-lettered, none may touch the table."""
    key = cid.encode()
    return [
        PoisonKind("truncated JSON", key, _customer(cid)[:25], SCHEMA_REASON),
        PoisonKind("not JSON", key, b"customer k deleted?", SCHEMA_REASON),
        PoisonKind("JSON array", key, b'[{"customer_id": "x"}]', SCHEMA_REASON),
        PoisonKind("string for bigint", key, _customer(cid, updated_at="yesterday"), SCHEMA_REASON),
        PoisonKind("float for bigint", key, _customer(cid, updated_at=1.5), SCHEMA_REASON),
        PoisonKind("number for string", key, _customer(cid, name=12345), SCHEMA_REASON),
        PoisonKind("missing field", key, _customer(cid, email=...), "required field 'email'"),
        PoisonKind("null field", key, _customer(cid, country=None), "required field 'country'"),
        PoisonKind("invalid UTF-8 value", key, b'{"name": "\xff\xfe"}', "value is not valid UTF-8"),
        PoisonKind("invalid UTF-8 key", b"\xc3(" + key, _customer(cid), "key is not valid UTF-8"),
        PoisonKind("no key", None, _customer(cid), "record has no key"),
    ]


@dataclass(frozen=True)
class Delivered:
    partition: int
    offset: int | None  # None: delivered, position not reported (an idempotent retry the
    # broker recognised as a duplicate of a record it had already written)
    poison: PoisonKind | None


PoisonBytes = dict[tuple[bytes | None, bytes], PoisonKind]


class EventStream(threading.Thread):
    """Produces updates, tombstones (10%) and poison (``poison_rate``) at ``rate`` events/s.

    Records are batched for up to ``linger_ms``, as the demo producer batches them.

    Delivery failures are kept in ``errors``; the broker may be down for a while (the producer
    buffers and retries for up to ``message.timeout.ms``).
    """

    def __init__(
        self,
        settings: Settings,
        rate: float,
        seed: int,
        keys: int = 2000,
        poison_rate: float = 0.01,
        linger_ms: int = 100,
    ) -> None:
        super().__init__(name="event-stream", daemon=True)
        self.settings = settings
        self.rate = rate
        self.rng = random.Random(seed)
        self.keys = keys
        self.poison_rate = poison_rate
        self.linger_ms = linger_ms
        self.delivered: list[Delivered] = []
        self._poison: PoisonBytes = {}
        self.errors: list[str] = []
        self.produced = 0
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        ensure_topics(self.settings, [TOPIC])
        producer = Producer(
            {
                **self.settings.kafka.client_config(),
                "enable.idempotence": True,
                "linger.ms": self.linger_ms,
                "message.timeout.ms": 300_000,
                "logger": CLIENT_LOGGER,  # no librdkafka lines on stderr while the broker is down
            }
        )
        started = time.monotonic()
        while not self._halt.is_set():
            due = int((time.monotonic() - started) * self.rate)
            while self.produced < due and not self._halt.is_set():
                self._produce_one(producer)
            producer.poll(0.01)
        while producer.flush(1.0) > 0:
            pass  # wait for every record (the broker may be restarting)

    def _produce_one(self, producer: Producer) -> None:
        i = self.produced
        cid = f"k{self.rng.randrange(self.keys):05d}"
        poison: PoisonKind | None = None
        roll = self.rng.random()
        if roll < self.poison_rate:
            kinds = poison_kinds(cid)
            poison = kinds[self.rng.randrange(len(kinds))]
            key, value = poison.key, poison.value
            with self._lock:
                self._poison[(key, value)] = poison
        elif roll < self.poison_rate + 0.1:
            key, value = cid.encode(), None
        else:
            key = cid.encode()
            value = json.dumps(
                {
                    "customer_id": cid,
                    "name": f"name-{i}",
                    "email": f"{cid}.{i}@example.com",
                    "country": self.rng.choice(["DE", "FR", "US"]),
                    "updated_at": 1_700_000_000_000 + i,
                }
            ).encode()

        def on_delivery(err: object, msg: object, poison: PoisonKind | None = poison) -> None:
            with self._lock:
                if err is not None:
                    self.errors.append(str(err))
                else:
                    self.delivered.append(Delivered(msg.partition(), msg.offset(), poison))  # type: ignore[attr-defined]

        produce_one(producer, key, value, on_delivery)
        self.produced += 1

    def finish(self, timeout_s: float = 330.0) -> None:
        """Stop producing and wait until every record is delivered or has failed."""
        self._halt.set()
        self.join(timeout_s)

    def end_offsets(self) -> dict[int, int]:
        """Per partition, one past the highest delivered offset."""
        with self._lock:
            ends: dict[int, int] = {}
            for d in self.delivered:
                if d.offset is not None:
                    ends[d.partition] = max(ends.get(d.partition, 0), d.offset + 1)
            return ends

    def poison(self) -> PoisonBytes:
        """Every poison record produced, by its (key, value) bytes, which no clean record has.
        The verification finds their positions in the log itself, so it does not depend on
        delivery reports (one may lack an offset, or arrive after the pipeline read the
        record)."""
        with self._lock:
            return dict(self._poison)
