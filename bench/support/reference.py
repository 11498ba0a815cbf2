"""Independent reference implementations: replay a topic in plain Python, no Spark, no Delta.

These know the pipelines' contracts (what a valid record is, KTable and running-sum semantics)
but share no code with them, so a test comparing the two can fail.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

# A customer's value fields and their types: the required ones, and customer_id, which may be
# left out (the Kafka key is the customer's id).
CUSTOMER_FIELDS = {"name": str, "email": str, "country": str, "updated_at": int}


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class Stamped:
    """A record read back with its position and timestamp."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def replay(bootstrap: str, topic: str) -> list[Record]:
    """Every record of ``topic``, read with a plain consumer until EOF on all partitions."""
    return [
        Record(s.topic, s.partition, s.offset, s.key, s.value)
        for s in replay_stamped(bootstrap, [topic])
    ]


def replay_stamped(bootstrap: str, topics: list[str]) -> list[Stamped]:
    """Every record of ``topics`` with its timestamp, read until EOF on all partitions."""
    config = {"bootstrap.servers": bootstrap, "group.id": "reference"}
    return [
        Stamped(m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value())
        for m in read_to_end(config, topics)
    ]


def read_to_end(config: dict[str, Any], topics: list[str]) -> list[Message]:
    """Every message of ``topics`` from offset 0 to the end of each partition (the last stable
    offset under ``isolation.level: read_committed``), read by a consumer with ``config`` and
    partitions assigned, not subscribed: no group rebalance, no committed position."""
    fixed = {
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    }
    consumer = Consumer({**config, **fixed})
    try:
        assignment = []
        for topic in topics:
            parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            assignment += [TopicPartition(topic, p, 0) for p in parts]
        consumer.assign(assignment)
        done: set[tuple[str, int]] = set()
        messages = []
        while len(done) < len(assignment):
            msg = consumer.poll(5)
            assert msg is not None, f"reading {topics} to the end stalled"
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                done.add((msg.topic(), msg.partition()))
                continue
            done.discard((msg.topic(), msg.partition()))
            messages.append(msg)
        return messages
    finally:
        consumer.close()


def log_ends(records: Iterable[Record | Stamped]) -> dict[str, dict[int, int]]:
    """Per topic and partition, the offset after the last record read back (the log's end)."""
    ends: dict[str, dict[int, int]] = {}
    for r in records:
        parts = ends.setdefault(r.topic, {})
        parts[r.partition] = max(parts.get(r.partition, 0), r.offset + 1)
    return ends


def changelog_table(records: Iterable[Record | Stamped]) -> dict[str, dict[str, Any]]:
    """A changelog topic read back as a table: per key the value at the highest offset of its
    partition, decoded as JSON; a tombstone deletes."""
    table: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        assert record.key is not None, "a changelog record without a key"
        if record.value is None:
            table.pop(record.key.decode(), None)
        else:
            table[record.key.decode()] = json.loads(record.value)
    return table


def _json_object(value: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(value.decode("utf-8"), parse_float=Decimal)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def _valid_key(record: Record) -> str | None:
    if record.key is None:
        return None
    try:
        return record.key.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _optional_string(obj: dict[str, Any], field: str) -> bool:
    """Whether ``field`` is absent, null or a string."""
    return obj.get(field) is None or isinstance(obj[field], str)


def customers_state(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """KTable semantics: per key, the valid record with the highest (partition, offset) wins."""
    latest: dict[str, tuple[tuple[int, int], dict[str, Any] | None]] = {}
    for r in records:
        key = _valid_key(r)
        if key is None:
            continue
        if r.value is None:
            row = None
        else:
            obj = _json_object(r.value)
            if (
                obj is None
                or not _optional_string(obj, "customer_id")
                or not all(
                    isinstance(obj.get(f), t) and not isinstance(obj.get(f), bool)
                    for f, t in CUSTOMER_FIELDS.items()
                )
            ):
                continue
            row = {f: obj[f] for f in CUSTOMER_FIELDS} | {
                "customer_id": key,
                "partition": r.partition,
                "offset": r.offset,
            }
        position = (r.partition, r.offset)
        if key not in latest or position > latest[key][0]:
            latest[key] = (position, row)
    return {k: row for k, (_, row) in latest.items() if row is not None}


def spend_state(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """Per customer: number of valid transactions, exact sum of amounts, latest ts."""
    state: dict[str, dict[str, Any]] = {}
    for r in records:
        key = _valid_key(r)
        if key is None or r.value is None:
            continue
        obj = _json_object(r.value)
        if obj is None:
            continue
        amount, ts = obj.get("amount"), obj.get("ts")
        if not isinstance(obj.get("txn_id"), str) or not _optional_string(obj, "customer_id"):
            continue
        if not isinstance(amount, (int, Decimal)) or isinstance(amount, bool):
            continue
        if not isinstance(ts, int) or isinstance(ts, bool):
            continue
        row = state.setdefault(
            key,
            {
                "customer_id": key,
                "txn_count": 0,
                "total_amount": Decimal("0.00"),
                "last_txn_ts": ts,
            },
        )
        row["txn_count"] += 1
        row["total_amount"] += Decimal(amount).quantize(Decimal("0.01"))
        row["last_txn_ts"] = max(row["last_txn_ts"], ts)
    return state


def table_state(rows: Iterable[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    state: dict[str, dict[str, Any]] = {}
    for row in rows:
        assert row[key] not in state, f"duplicate key {row[key]} in the table"
        state[row[key]] = dict(row)
    return state
