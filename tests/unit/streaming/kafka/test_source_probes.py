"""How often the source asks the log for its ends: only when the answer can change the batch."""

from __future__ import annotations

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from streaming.kafka import source
from streaming.kafka.source import KafkaStreamReader
from streaming.kafka.source_options import SourceOptions


class _Log:
    """The broker's side: the log's bounds now, and how many times they were measured."""

    def __init__(self, ends: dict[int, int]) -> None:
        self.ends = dict(ends)
        self.measured = 0

    def bounds(self, topics):
        self.measured += 1
        return {"t": dict.fromkeys(self.ends, 0)}, {"t": dict(self.ends)}

    def close(self) -> None:
        pass


def _reader(log: _Log, max_rows: int | None = None) -> KafkaStreamReader:
    options = {"subscribe": "t", "kafka.bootstrap.servers": "127.0.0.1:1"}
    if max_rows:
        options["maxOffsetsPerTrigger"] = str(max_rows)
    reader = KafkaStreamReader(SourceOptions.parse(options))
    reader._log = log  # the broker edge
    return reader


def _end(answer: dict) -> dict[int, int]:
    return {int(p): o for p, o in answer["t"].items()}


def test_an_available_now_run_measures_the_ends_once_and_stops_at_them():
    log = _Log({0: 1000, 1: 800})
    reader = _reader(log, max_rows=300)
    reader.prepareForTriggerAvailableNow()
    log.ends = {0: 5000, 1: 5000}  # records arriving during the rebuild are not its business
    position = {"t": {"0": 0, "1": 0}}
    for _ in range(10):
        position = reader.latestOffset(position, ReadMaxRows(300))
    assert _end(position) == {0: 1000, 1: 800}
    assert log.measured == 1


def test_a_continuous_query_skips_measuring_while_the_known_backlog_fills_a_batch():
    log = _Log({0: 1000, 1: 1000})
    reader = _reader(log, max_rows=500)
    position = reader.latestOffset({"t": {"0": 0, "1": 0}}, ReadMaxRows(500))
    assert _end(position) == {0: 250, 1: 250} and log.measured == 1
    for _ in range(3):  # 1500, 1000, then 500 records known ahead: each a whole batch
        position = reader.latestOffset(position, ReadMaxRows(500))
    assert _end(position) == {0: 1000, 1: 1000} and log.measured == 1
    log.ends = {0: 1100, 1: 1000}
    position = reader.latestOffset(position, ReadMaxRows(500))  # nothing known ahead: measure
    assert _end(position) == {0: 1100, 1: 1000} and log.measured == 2
    # Caught up: every trigger measures, so new records are seen at the next one.
    reader.latestOffset(position, ReadMaxRows(500))
    reader.latestOffset(position, ReadMaxRows(500))
    assert log.measured == 4


def test_without_a_read_limit_every_trigger_measures():
    log = _Log({0: 10})
    reader = _reader(log)
    reader.latestOffset({"t": {"0": 0}}, ReadAllAvailable())
    log.ends = {0: 20}
    assert _end(reader.latestOffset({"t": {"0": 10}}, ReadAllAvailable())) == {0: 20}
    assert log.measured == 2


def test_known_ends_are_measured_again_after_a_while(monkeypatch):
    """So a log the broker lost during a long catch-up shows in the planning."""
    clock = [1000.0]
    monkeypatch.setattr(source.time, "monotonic", lambda: clock[0])
    log = _Log({0: 10_000})
    reader = _reader(log, max_rows=100)
    position = reader.latestOffset({"t": {"0": 0}}, ReadMaxRows(100))
    position = reader.latestOffset(position, ReadMaxRows(100))
    assert log.measured == 1
    clock[0] += source.KNOWN_ENDS_REUSE_S + 1
    reader.latestOffset(position, ReadMaxRows(100))
    assert log.measured == 2
