"""The Kafka source ends its batches at the shared cuts: at every cut once caught up, at the
newest one within the read limit during a replay, under the live version's cap when it has one."""

from __future__ import annotations

import time

from pyspark.sql.streaming.datasource import ReadMaxRows

from streaming.atomic_file import write_atomically
from streaming.kafka import offsets as off
from streaming.kafka.cuts import CutLog
from streaming.kafka.source import KafkaStreamReader
from streaming.kafka.source_options import SourceOptions

HOUR_MS = 3_600_000


class _Log:
    """The broker's side: the last stable offsets of every topic now."""

    def __init__(self, ends: dict[str, dict[int, int]]) -> None:
        self.ends = ends

    def latest(self, topics):
        return {t: dict(self.ends.get(t, {})) for t in topics}

    def bounds(self, topics):
        return {t: dict.fromkeys(self.ends[t], 0) for t in topics}, self.latest(topics)

    def close(self) -> None:
        pass


def _reader(log: _Log, tmp_path, interval_ms: int = HOUR_MS, **extra: str) -> KafkaStreamReader:
    options = {
        "subscribe": "t",
        "kafka.bootstrap.servers": "127.0.0.1:1",
        "cutLog": str(tmp_path / "cuts.jsonl"),
        "cutIntervalMs": str(interval_ms),
        **extra,
    }
    reader = KafkaStreamReader(SourceOptions.parse(options))
    reader._log = log  # the broker edge
    return reader


def _take(tmp_path, log: _Log) -> None:
    """Another deployment takes a cut now."""
    CutLog(tmp_path / "cuts.jsonl").take(["t", "u"], log.latest)


def _next(reader: KafkaStreamReader, position: dict[int, int], rows: int = 10**9):
    answer = reader.latestOffset(off.to_spark({"t": position}), ReadMaxRows(rows))
    return {int(p): o for p, o in answer["t"].items()}


def test_a_caught_up_stream_commits_at_every_cut_and_waits_for_the_next(tmp_path):
    log = _Log({"t": {0: 10, 1: 10}, "u": {0: 3}})
    reader = _reader(log, tmp_path)
    position = _next(reader, {0: 0, 1: 0})  # no cut yet: this source takes the first
    assert position == {0: 10, 1: 10}
    log.ends["t"] = {0: 25, 1: 12}
    assert _next(reader, position) == position  # records after the newest cut wait
    _take(tmp_path, log)
    log.ends["t"] = {0: 30, 1: 30}
    assert _next(reader, position) == {0: 25, 1: 12}


def test_a_stream_takes_a_cut_when_the_newest_is_older_than_the_interval(tmp_path):
    log = _Log({"t": {0: 10}})
    reader = _reader(log, tmp_path, interval_ms=1)
    position = _next(reader, {0: 0})
    log.ends["t"] = {0: 17}
    time.sleep(0.002)  # the interval passing, not synchronisation
    assert _next(reader, position) == {0: 17}
    assert [c.offsets for c in CutLog(tmp_path / "cuts.jsonl").cuts()] == [
        {"t": {0: 10}},
        {"t": {0: 17}},
    ]


def test_a_replay_ends_each_batch_at_the_newest_cut_within_its_limit(tmp_path):
    log = _Log({"t": {0: 0}})
    cuts = CutLog(tmp_path / "cuts.jsonl")
    for end in range(10, 1001, 10):  # a cut every 10 records, as a busy platform takes them
        log.ends["t"] = {0: end}
        cuts.take(["t"], log.latest)
    reader = _reader(log, tmp_path)
    position, ends = {0: 0}, []
    while position[0] < 1000:
        position = _next(reader, position, rows=250)
        ends.append(position[0])
    assert ends == [250, 500, 750, 1000]


def test_the_live_versions_cap_and_the_cuts_compose_the_tighter_wins(tmp_path):
    log = _Log({"t": {0: 0}})
    for end in (40, 80, 120):
        log.ends["t"] = {0: end}
        _take(tmp_path, log)
    cap = tmp_path / "alignment.json"
    write_atomically(cap, off.dumps({"t": {0: 100}}))  # the live version's latest commit
    reader = _reader(log, tmp_path, endingOffsetsFile=str(cap))
    assert _next(reader, {0: 0}) == {0: 80}  # the newest cut below the cap
    assert _next(reader, {0: 80}) == {0: 100}  # no cut up to the cap: the cap itself
    write_atomically(cap, off.dumps({"t": {0: 60}}))
    assert _next(reader, {0: 0}) == {0: 40}


def test_an_available_now_run_ends_at_a_cut_it_takes_when_it_starts(tmp_path):
    log = _Log({"t": {0: 70, 1: 30}, "u": {0: 5}})
    _take(tmp_path, log)
    log.ends["t"] = {0: 90, 1: 31}
    reader = _reader(log, tmp_path)
    reader.prepareForTriggerAvailableNow()
    log.ends["t"] = {0: 500, 1: 500}  # records arriving during the run are not its business
    position, ends = {0: 0, 1: 0}, []
    for _ in range(4):
        position = _next(reader, position, rows=60)
        ends.append(position)
    assert ends[-1] == {0: 90, 1: 31}
    newest = CutLog(tmp_path / "cuts.jsonl").newest()
    assert newest is not None and newest.offsets == {"t": {0: 90, 1: 31}, "u": {0: 5}}
