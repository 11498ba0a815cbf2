"""Consumers kept between reads in one process: an executor's Python worker runs many tasks.

A new consumer opens a connection to each broker it reads from, asks for metadata and API
versions and starts librdkafka's threads before its first fetch; a worker reads for every
deployment of the engine, one task after another, so each task paying for a consumer of its own
is most of a small micro-batch's read. A consumer is kept per configuration instead, and
reassigned for each read: ``assign()`` gives its partitions new fetch positions, and librdkafka
drops the records it had fetched for an earlier assignment.

A consumer is reused only in the process that created it: a forked child starts with an empty
pool, since librdkafka's threads do not survive a fork. A read that fails or is abandoned closes
its consumer rather than return it, and one left idle for ``IDLE_S`` is closed at the next lease
(its broker may be gone: a test's, or one replaced).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from confluent_kafka import Consumer, KafkaException

from streaming.kafka.log import consumer_config

# Idle consumers kept per configuration: a worker runs one task at a time; a second covers a
# process that reads two ranges at once (a thread per task in local tests).
IDLE_PER_CONFIG = 2
IDLE_S = 30.0

_Key = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


class ConsumerPool:
    """Idle consumers by configuration, for the process that created them; ``keep_idle``: how
    many to keep per configuration (0: a consumer per lease, closed after it)."""

    def __init__(self, keep_idle: int = IDLE_PER_CONFIG) -> None:
        self.keep_idle = keep_idle
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._idle: dict[_Key, list[tuple[Consumer, float]]] = {}
        self.created = 0  # consumers this process created, for tests and profiles

    @contextmanager
    def lease(self, client: Mapping[str, str], **extra: str) -> Iterator[Consumer]:
        """A consumer with no assignment for ``client`` plus ``extra`` settings; it goes back
        to the pool when the block ends normally and is closed when it raises."""
        key: _Key = (tuple(sorted(client.items())), tuple(sorted(extra.items())))
        consumer = self._take(key)
        if consumer is None:
            consumer = Consumer(consumer_config(client, **extra))
            self.created += 1
        try:
            yield consumer
        except BaseException:
            consumer.close()
            raise
        if not _clear(consumer) or not self._keep(key, consumer):
            consumer.close()

    def close(self) -> None:
        """Close every idle consumer of this process."""
        with self._lock:
            idle = [c for cs in self._idle.values() for c, _ in cs] if self._mine() else []
            self._idle = {}
        for consumer in idle:
            consumer.close()

    def _take(self, key: _Key) -> Consumer | None:
        oldest = time.monotonic() - IDLE_S
        stale: list[Consumer] = []
        with self._lock:
            if not self._mine():
                self._pid, self._idle, self.created = os.getpid(), {}, 0
            for kept in self._idle.values():
                stale += [c for c, since in kept if since < oldest]
                kept[:] = [(c, since) for c, since in kept if since >= oldest]
            idle = self._idle.get(key)
            taken = idle.pop()[0] if idle else None
        for consumer in stale:
            consumer.close()
        return taken

    def _keep(self, key: _Key, consumer: Consumer) -> bool:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if not self._mine() or len(idle) >= self.keep_idle:
                return False
            idle.append((consumer, time.monotonic()))
            return True

    def _mine(self) -> bool:
        return self._pid == os.getpid()


def _clear(consumer: Consumer) -> bool:
    """Resume what the read paused (pausing outlives an assignment) and drop the assignment;
    False when the consumer cannot be reused."""
    try:
        assigned = consumer.assignment()
        if assigned:
            consumer.resume(assigned)
        consumer.unassign()
    except KafkaException:
        return False
    return True


POOL = ConsumerPool()
