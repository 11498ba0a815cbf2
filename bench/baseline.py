"""The baseline: the compaction a user could hand-roll in an afternoon.

One plain confluent-kafka consumer reads the topic end to end, ``json.loads`` every value and
keeps the latest value per key in a dict (a tombstone pops the key). Single process, no
durability, no exactly-once: the yardstick the streaming pipeline is measured against.
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from bench.workload import TOPIC


def run_baseline(bootstrap: str) -> tuple[float, dict[str, dict[str, Any]]]:
    """Seconds to compact the whole topic, and the state it built."""
    started = time.perf_counter()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-baseline",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "fetch.queue.backoff.ms": 10,
            "enable.auto.commit": False,
        }
    )
    parts = consumer.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in parts])
    state: dict[str, dict[str, Any]] = {}
    done: set[int] = set()
    while len(done) < len(parts):
        for msg in consumer.consume(10_000, timeout=1):
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    done.add(msg.partition())
                continue
            key = msg.key().decode()
            value = msg.value()
            if value is None:
                state.pop(key, None)
            else:
                state[key] = json.loads(value)
    consumer.close()
    return time.perf_counter() - started, state
