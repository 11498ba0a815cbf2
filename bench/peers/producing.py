"""Writing a workload's log: its topics made afresh, records written as fast as possible (a
backlog) or at a fixed rate (a latency run), each record's offset and creation time noted.

Topics are deleted and created again rather than appended to, so every run of every engine reads
a log that starts at offset 0 and holds exactly the records the reference was computed on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from bench.peers.workloads import BASE_TS, Record, Workload
from bench.workload import PRODUCER_CONFIG
from streaming.kafka.admin import ensure_topics
from streaming.settings import Settings


def recreate_topics(settings: Settings, names: Iterable[str], timeout_s: float = 60.0) -> None:
    """Delete ``names`` where they exist, wait until they are gone, create them empty (with the
    platform's topic settings: every record kept, which its stateful pipelines require)."""
    names = list(names)
    delete_topics(settings, names, timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            ensure_topics(settings, names)
            return
        except KafkaException:  # still marked for deletion
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def delete_topics(
    settings: Settings, names: Iterable[str] | Callable[[str], bool], timeout_s: float = 60.0
) -> None:
    """Delete the topics named, or those whose name the predicate accepts; wait until gone."""
    admin = AdminClient(settings.kafka.client_config())
    existing = set(admin.list_topics(timeout=10).topics)
    doomed = sorted(filter(names, existing) if callable(names) else existing & set(names))
    if not doomed:
        return
    for future in admin.delete_topics(doomed, operation_timeout=timeout_s).values():
        with contextlib.suppress(KafkaException):  # already being deleted
            future.result()
    deadline = time.monotonic() + timeout_s
    while set(doomed) & set(admin.list_topics(timeout=10).topics):
        if time.monotonic() > deadline:
            msg = f"topics {doomed} were not deleted within {timeout_s} s"
            raise RuntimeError(msg)
        time.sleep(0.1)


@dataclass
class Written:
    """Where each written record landed: (topic, partition) -> next offset, and per record of
    interest (topic, partition, offset, creation time in s) for latencies."""

    ends: dict[tuple[str, int], int] = field(default_factory=dict)
    timed: list[tuple[str, int, int, float]] = field(default_factory=list)
    last_ts: int = 0

    def place(self, record: Record) -> int:
        where = (record.topic, record.partition)
        offset = self.ends.get(where, 0)
        self.ends[where] = offset + 1
        self.last_ts = max(self.last_ts, record.ts)
        return offset

    @property
    def total(self) -> int:
        return sum(self.ends.values())


class LogWriter:
    """Writes records to their topic and partition with their event time as timestamp; a
    record's offset is its place in its partition (the topics are fresh, the producer
    idempotent). ``sink(record, offset)`` sees every record, e.g. a reference."""

    def __init__(self, bootstrap: str, sink: Callable[[Record, int], None], linger_ms: int = 20):
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, "linger.ms": linger_ms}
        )
        self.sink = sink
        self.written = Written()
        self.failed: list[str] = []  # delivery errors; the offsets noted would be wrong

    def write(self, record: Record, timed: bool = False) -> None:
        offset = self.written.place(record)
        self.sink(record, offset)
        if timed:
            self.written.timed.append((record.topic, record.partition, offset, time.time()))
        while True:
            try:
                self.producer.produce(
                    record.topic,
                    key=record.key.encode(),
                    value=record.value,
                    partition=record.partition,
                    timestamp=record.ts,
                    on_delivery=self._delivered,
                )
                return
            except BufferError:
                self.producer.poll(0.05)

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed.append(f"{msg.topic()}-{msg.partition()}: {err}")

    def flush(self, timeout_s: float = 120.0) -> Written:
        left = self.producer.flush(timeout_s)
        if left or self.failed:
            msg = (
                f"{left} records were not delivered within {timeout_s} s, {len(self.failed)} "
                f"failed (first: {self.failed[:1]})"
            )
            raise RuntimeError(msg)
        return self.written


def write_backlog(writer: LogWriter, workload: Workload, count: int) -> float:
    """``count`` records on the backlog's clock, then the workload's closing records; seconds."""
    started = time.perf_counter()
    for i in range(count):
        writer.write(workload.next(_backlog_ts(workload, i)))
    for record in workload.closing(writer.written.last_ts):
        writer.write(record)
    writer.flush()
    return time.perf_counter() - started


def _backlog_ts(workload: Workload, i: int) -> int:
    return BASE_TS + i * workload.step_ms


def write_history(writer: LogWriter, workload: Workload, extra: int = 0) -> None:
    """The records a fixed-rate run starts from, stamped with the wall clock: the workload's own
    history and ``extra`` records of its mix after it (a table already large when the rate
    starts)."""
    for _ in range(workload.history + extra):
        writer.write(workload.next(_now_ms(writer)))
    writer.flush()


def write_at_rate(writer: LogWriter, workload: Workload, rate: int, seconds: float) -> int:
    """``rate`` records/s for ``seconds`` in 5 ms ticks, event time = the wall clock at
    production (never going back); every record's offset and creation time is noted."""
    workload.rate_phase = True
    started = time.perf_counter()
    total = int(rate * seconds)
    sent = 0
    while sent < total:
        due = min(total, int((time.perf_counter() - started) * rate) + 1)
        for _ in range(due - sent):
            writer.write(workload.next(_now_ms(writer)), timed=True)
        sent = due
        writer.producer.poll(0.005)
    for record in workload.closing(writer.written.last_ts):
        writer.write(record)
    writer.flush()
    return sent


def _now_ms(writer: LogWriter) -> int:
    return max(int(time.time() * 1000), writer.written.last_ts)
