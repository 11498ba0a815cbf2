"""How far an engine's visible output covers its input, seen from outside the engine.

Every engine here makes its results visible together with the input position they reflect:

- the platform: each Delta commit records the source end offsets it reflects;
- Kafka Streams and Quix Streams, exactly once: the transaction that makes a batch's results
  visible to ``read_committed`` readers also commits the consumer group's offsets;
- Spark: a micro-batch's results are written before its commit file; ``offsets/N`` holds the end
  offsets of batch ``N`` (and the watermark it ran with).

A :class:`Probe` polls that position every ``interval_s`` and keeps each change with the time it
was first seen, from which the runs derive completion, throughput and per-record latency. For
Spark it also keeps the watermark: a left outer join emits its unmatched rows in the batch after
the watermark passed them, which covers no new offset.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

Position = dict[tuple[str, int], int]  # (topic, partition) -> next offset not yet covered


class Probe(threading.Thread):
    """Polls ``position()`` and records (time.time(), position, watermark) on every change."""

    def __init__(self, interval_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.interval_s = interval_s
        self.seen: list[tuple[float, Position, int]] = []
        self._stop_event = threading.Event()
        self.error: BaseException | None = None

    def position(self) -> Position:
        raise NotImplementedError

    def watermark(self) -> int:
        """The event-time watermark of the output seen last (Spark's; 0 elsewhere)."""
        return 0

    def run(self) -> None:
        last: tuple[Position, int] = ({}, 0)
        try:
            while not self._stop_event.wait(self.interval_s):
                now = (self.position(), self.watermark())
                if now[0] and now != last:
                    self.seen.append((time.time(), *now))
                    last = now
        except BaseException as exc:  # surfaced by the run that waits on this probe
            self.error = exc
        finally:
            self.close()

    def close(self) -> None:
        pass

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=10)

    def covers(self, ends: Position, watermark_ms: int = 0) -> float | None:
        """When the output first covered ``ends`` with at least that watermark (None: not yet)."""
        for at, position, watermark in list(self.seen):
            if watermark >= watermark_ms and all(
                position.get(where, 0) >= end for where, end in ends.items()
            ):
                return at
        return None

    def covered_at(self, where: tuple[str, int], offset: int) -> float | None:
        """When the record at ``offset`` of ``where`` first had its results visible."""
        for at, position, _ in self.seen:
            if position.get(where, 0) > offset:
                return at
        return None

    def count_at(self, at: float) -> int:
        """Records covered at time ``at``."""
        count = 0
        for seen_at, position, _ in self.seen:
            if seen_at > at:
                break
            count = sum(position.values())
        return count


class GroupOffsets(Probe):
    """A consumer group's committed offsets (Kafka Streams, Quix Streams)."""

    def __init__(self, bootstrap: str, group: str, partitions: list[tuple[str, int]]) -> None:
        super().__init__()
        self.partitions = [TopicPartition(t, p) for t, p in partitions]
        self._consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
        )

    def position(self) -> Position:
        try:
            committed = self._consumer.committed(self.partitions, timeout=5)
        except KafkaException:  # e.g. the group coordinator is loading; ask again
            return {}
        return {(tp.topic, tp.partition): tp.offset for tp in committed if tp.offset >= 0}

    def close(self) -> None:
        self._consumer.close()


class SparkCheckpoint(Probe):
    """The end offsets of the last committed batch of a Spark query (Kafka source offsets)."""

    def __init__(self, checkpoint: Path) -> None:
        super().__init__()
        self.checkpoint = checkpoint
        self._watermark = 0

    def watermark(self) -> int:
        return self._watermark

    def position(self) -> Position:
        commits = self.checkpoint / "commits"
        if not commits.is_dir():
            return {}
        done = [int(f.name) for f in commits.iterdir() if f.name.isdigit()]
        if not done:
            return {}
        lines = (self.checkpoint / "offsets" / str(max(done))).read_text().splitlines()
        metadata = json.loads(lines[1])
        self._watermark = int(metadata.get("batchWatermarkMs", 0))
        position: Position = {}
        for line in lines[2:]:
            source: dict[str, Any] = json.loads(line)
            for topic, partitions in source.items():
                for partition, offset in partitions.items():
                    position[(topic, int(partition))] = int(offset)
        return position


class DeltaCommits(Probe):
    """The source end offsets each commit of a platform table records."""

    def __init__(self, table: Path) -> None:
        super().__init__()
        self.table = table
        self._version = -1
        self._position: Position = {}

    def position(self) -> Position:
        from streaming.delta.commit_info import parse_commit
        from streaming.delta.log_entries import log_name, parse_entry

        while True:  # log entries are published whole; read each new one once
            try:
                content = (self.table / log_name(self._version + 1)).read_bytes()
            except FileNotFoundError:
                return self._position
            self._version += 1
            for action in parse_entry(content):
                info = action.get("commitInfo")
                commit = parse_commit({**info, "version": self._version}) if info else None
                if commit is not None:
                    self._position = {
                        (topic, partition): offset
                        for topic, ends in commit.end_offsets.items()
                        for partition, offset in ends.items()
                    }


def wait_for(probe: Probe, done: Any, alive: Any, timeout_s: float, what: str) -> float:
    """Wait until ``done()`` gives a time; fail if ``alive()`` turns false or time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        at = done()
        if at is not None:
            return at
        if probe.error is not None:
            raise RuntimeError(f"the progress probe failed while {what}: {probe.error}")
        if not alive():
            raise RuntimeError(f"the engine exited while {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s while {what}")
        time.sleep(0.05)
