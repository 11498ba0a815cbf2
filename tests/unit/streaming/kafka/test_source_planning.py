"""Where the source plans its batches to end, from the log's bounds it measures."""

from __future__ import annotations

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

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

    def latest(self, topics):
        return self.bounds(topics)[1]

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


def test_an_available_now_run_stops_at_the_ends_measured_when_it_began():
    log = _Log({0: 1000, 1: 800})
    reader = _reader(log, max_rows=300)
    reader.prepareForTriggerAvailableNow()
    log.ends = {0: 5000, 1: 5000}  # records arriving during the rebuild are not its business
    position = {"t": {"0": 0, "1": 0}}
    for _ in range(10):
        position = reader.latestOffset(position, ReadMaxRows(300))
    assert _end(position) == {0: 1000, 1: 800}


def test_a_continuous_query_takes_batches_of_the_read_limit_then_follows_the_log():
    log = _Log({0: 1000, 1: 1000})
    reader = _reader(log, max_rows=500)
    position = reader.latestOffset({"t": {"0": 0, "1": 0}}, ReadMaxRows(500))
    assert _end(position) == {0: 250, 1: 250}
    for _ in range(3):
        position = reader.latestOffset(position, ReadMaxRows(500))
    assert _end(position) == {0: 1000, 1: 1000}
    log.ends = {0: 1100, 1: 1000}
    assert _end(reader.latestOffset(position, ReadMaxRows(500))) == {0: 1100, 1: 1000}


def test_without_a_read_limit_every_trigger_reads_to_the_end():
    log = _Log({0: 10})
    reader = _reader(log)
    reader.latestOffset({"t": {"0": 0}}, ReadAllAvailable())
    log.ends = {0: 20}
    assert _end(reader.latestOffset({"t": {"0": 10}}, ReadAllAvailable())) == {0: 20}
