"""The Kafka data source on its own: exact ranges, starting offsets, limits, several topics."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Producer

from bench.support.producing import Out, send
from streaming.errors import DataLossError
from streaming.kafka.admin import ensure_topics
from streaming.kafka.consumer_pool import POOL
from streaming.kafka.log import KafkaLog
from streaming.kafka.offsets import PartitionRange
from streaming.kafka.reader import read_ranges
from streaming.kafka.source import FORMAT
from streaming.wait import wait_until

pytestmark = pytest.mark.integration


def _collect(spark, settings, checkpoint, tasks=None, **options):  # type: ignore[no-untyped-def]
    """Run an availableNow query; return (rows, batch sizes). ``tasks`` collects the number of
    input partitions (Spark tasks) of each batch."""
    batches: list[int] = []
    rows: list[tuple] = []

    def sink(df, batch_id):  # type: ignore[no-untyped-def]
        if tasks is not None:
            tasks.append(df.rdd.getNumPartitions())
        got = [(r.topic, r.partition, r.offset, r.key, r.value) for r in df.collect()]
        batches.append(len(got))
        rows.extend(got)

    reader = spark.readStream.format(FORMAT).option(
        "kafka.bootstrap.servers", settings.kafka.bootstrap_servers
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        finished = query.awaitTermination(120)
    finally:
        query.stop()
    assert finished, "the availableNow query did not finish within 120 s"
    assert query.exception() is None, query.exception()
    return rows, batches


def _records(topic: str, n: int, prefix: str = "") -> list[Out]:
    return [Out(topic, f"{prefix}{i % 37}".encode(), f"{prefix}v{i}".encode()) for i in range(n)]


def test_committed_transactions_are_read_and_aborted_ones_skipped(
    spark, settings, broker, tmp_path
):
    """Transaction markers and aborted records occupy offsets but are never read: ranges with
    such gaps, cut anywhere by the batch limit, still yield every committed record once."""
    ensure_topics(settings, ["u"])
    producer = Producer(
        {**settings.kafka.client_config(), "transactional.id": f"t-{uuid.uuid4().hex[:8]}"}
    )
    producer.init_transactions(30)
    expected = []
    for txn in range(12):
        producer.begin_transaction()
        for i in range(50):
            value = f"t{txn}-{i}".encode()
            producer.produce("u", value, f"k{i % 7}".encode(), partition=i % 2)
        producer.flush(30)
        if txn % 3 == 2:
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
            expected += [f"t{txn}-{i}".encode() for i in range(50)]
    rows, batches = _collect(
        spark,
        settings,
        tmp_path / "cp",
        subscribe="u",
        startingOffsets="earliest",
        maxOffsetsPerTrigger="37",
    )
    assert sorted(v for *_, v in rows) == sorted(expected)
    assert max(batches) <= 37


def test_reads_every_record_exactly_despite_batching_producers(spark, settings, broker, tmp_path):
    send(settings, _records("a", 10_000), linger_ms=100)
    with KafkaLog(settings.kafka.client_config()) as log:
        ends = log.latest(["a"])["a"]
    assert sum(ends.values()) == 10_000
    rows, batches = _collect(
        spark,
        settings,
        tmp_path / "cp",
        subscribe="a",
        startingOffsets="earliest",
        maxOffsetsPerTrigger="3000",
    )
    assert len(rows) == 10_000
    assert len({(t, p, o) for t, p, o, _, _ in rows}) == 10_000
    assert sorted(v for *_, v in rows) == sorted(f"v{i}".encode() for i in range(10_000))
    assert len(batches) >= 4 and max(batches) <= 3000

    # Restarting the same checkpoint reads only what came after.
    send(settings, _records("a", 500, prefix="late"))
    rows, _ = _collect(spark, settings, tmp_path / "cp", subscribe="a", startingOffsets="earliest")
    assert sorted(v for *_, v in rows) == sorted(f"latev{i}".encode() for i in range(500))


def test_latest_reads_exactly_what_comes_after_the_start(spark, settings, broker, tmp_path):
    ensure_topics(settings, {"b": {"cleanup.policy": "delete"}})
    send(settings, [Out("b", b"k", f"old{i}".encode(), partition=i % 2) for i in range(10)])
    rows: list[bytes] = []
    query = (
        spark.readStream.format(FORMAT)
        .option("kafka.bootstrap.servers", settings.kafka.bootstrap_servers)
        .option("subscribe", "b")
        .option("startingOffsets", "latest")
        .load()
        .writeStream.foreachBatch(lambda df, _: rows.extend(r.value for r in df.collect()))
        .option("checkpointLocation", str(tmp_path / "latest"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        # The first (empty) trigger's progress means the start position has been resolved.
        assert wait_until(lambda: query.lastProgress is not None, 120), query.status
        assert rows == []
        new = [f"new{i}".encode() for i in range(10)]
        send(settings, [Out("b", b"k", v, partition=i % 2) for i, v in enumerate(new)])
        assert wait_until(lambda: len(rows) >= len(new) or query.exception(), 120), rows
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    assert sorted(rows) == sorted(new)


def test_json_starting_offsets(spark, settings, broker, tmp_path):
    ensure_topics(settings, {"b": {"cleanup.policy": "delete"}})
    send(settings, [Out("b", b"k", f"old{i}".encode(), partition=0) for i in range(10)])
    spec = json.dumps({"b": {"0": 7, "1": -2}})
    rows, _ = _collect(spark, settings, tmp_path / "json", subscribe="b", startingOffsets=spec)
    assert [v for *_, v in rows] == [b"old7", b"old8", b"old9"]


def test_include_headers_reads_every_header_in_order(spark, settings, broker, tmp_path):
    sent = [
        Out("h", b"k", b"no headers", partition=0),
        Out("h", b"k", b"one", partition=0, headers=(("trace", b"t-1"),)),
        Out("h", b"k", b"two", partition=0, headers=(("a", b"1"), ("b", None), ("a", b"2"))),
    ]
    send(settings, sent)
    got: list[tuple[bytes, list[tuple[str, bytes | None]] | None]] = []

    def sink(df, _):  # type: ignore[no-untyped-def]
        got.extend(
            (r.value, None if r.headers is None else [(h.key, h.value) for h in r.headers])
            for r in df.collect()
        )

    query = (
        spark.readStream.format(FORMAT)
        .option("kafka.bootstrap.servers", settings.kafka.bootstrap_servers)
        .option("subscribe", "h")
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "with"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120), "the availableNow query did not finish"
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    by_value = {value: headers or [] for value, headers in got}
    assert by_value == {
        b"no headers": [],
        b"one": [("trace", b"t-1")],
        b"two": [("a", b"1"), ("b", None), ("a", b"2")],
    }
    # without the option the schema has no headers column (as with Spark's Kafka source)
    without = (
        spark.readStream.format(FORMAT)
        .option("kafka.bootstrap.servers", settings.kafka.bootstrap_servers)
        .option("subscribe", "h")
        .load()
    )
    assert "headers" not in without.columns


def test_several_topics_in_one_source(spark, settings, broker, tmp_path):
    topic_a, topic_b = f"t{uuid.uuid4().hex[:6]}", f"t{uuid.uuid4().hex[:6]}"
    send(settings, _records(topic_a, 300) + _records(topic_b, 200))
    rows, _ = _collect(
        spark,
        settings,
        tmp_path / "cp",
        subscribe=f"{topic_a},{topic_b}",
        startingOffsets="earliest",
    )
    counts = {t: sum(1 for r in rows if r[0] == t) for t in (topic_a, topic_b)}
    assert counts == {topic_a: 300, topic_b: 200}


def test_small_batches_of_several_topics_are_read_in_one_task(spark, settings, broker, tmp_path):
    """maxPartitions/minPartitionRecords pack the ranges; one consumer reads them all exactly."""
    topic_a, topic_b = f"t{uuid.uuid4().hex[:6]}", f"t{uuid.uuid4().hex[:6]}"
    send(settings, _records(topic_a, 3000) + _records(topic_b, 2000), linger_ms=20)
    tasks: list[int] = []
    rows, batches = _collect(
        spark,
        settings,
        tmp_path / "cp",
        tasks,
        subscribe=f"{topic_a},{topic_b}",
        startingOffsets="earliest",
        maxOffsetsPerTrigger="1200",
        maxPartitions="2",
        minPartitionRecords="100000",
    )
    assert sorted((t, v) for t, _, _, _, v in rows) == sorted(
        [(topic_a, f"v{i}".encode()) for i in range(3000)]
        + [(topic_b, f"v{i}".encode()) for i in range(2000)]
    )
    assert len({(t, p, o) for t, p, o, _, _ in rows}) == 5000
    assert len(batches) >= 5 and max(batches) <= 1200
    assert set(tasks) == {1}  # 8 partitions, but each batch under minPartitionRecords


def _numbered_topic(settings, partitions: int) -> str:  # type: ignore[no-untyped-def]
    """A new topic whose partition ``p`` holds the values ``v<p>-<offset>`` at offsets 0-999."""
    topic = f"t{uuid.uuid4().hex[:6]}"
    send(
        settings,
        [
            Out(topic, b"k", f"v{p}-{i}".encode(), partition=p)
            for p in range(partitions)
            for i in range(1000)
        ],
    )
    return topic


def _by_partition(batches, column: str) -> dict[int, list]:  # type: ignore[no-untyped-def]
    """A column of the record batches ``read_ranges`` yields, by partition, in order."""
    got: dict[int, list] = {}
    for batch in batches:
        (partition,) = set(batch.column("partition").to_pylist())
        got.setdefault(partition, []).extend(batch.column(column).to_pylist())
    return got


def test_read_ranges_stops_at_each_end_and_reports_a_short_log(settings, broker):
    """Ranges end below the log's end (as in a live stream) or beyond it (lost records)."""
    topic = _numbered_topic(settings, 4)
    client = settings.kafka.client_config()
    ranges = [PartitionRange(topic, p, 100 * p, 100 * p + 250) for p in range(4)]
    got = _by_partition(read_ranges(client, ranges, batch_rows=64), "offset")
    assert got == {p: list(range(100 * p, 100 * p + 250)) for p in range(4)}
    beyond = [PartitionRange(topic, 0, 990, 1050), PartitionRange(topic, 1, 900, 950)]
    with pytest.raises(
        DataLossError, match=f"{topic}-0 ends at offset 1000 but the batch was planned up to 1050"
    ):
        list(read_ranges(client, beyond))


def test_a_pooled_consumer_reads_each_range_exactly_whatever_it_read_before(settings, broker):
    """Reads in one process share a consumer: one range after another on the same partitions,
    backwards and forwards, each gives exactly its records; a read that fails or is abandoned
    does not hand its consumer on."""
    topic = _numbered_topic(settings, 2)
    client = settings.kafka.client_config()

    def read(*ranges: tuple[int, int, int]) -> dict[int, list[bytes]]:
        wanted = [PartitionRange(topic, p, start, end) for p, start, end in ranges]
        return _by_partition(read_ranges(client, wanted, batch_rows=64), "value")

    def expected(*ranges: tuple[int, int, int]) -> dict[int, list[bytes]]:
        return {p: [f"v{p}-{i}".encode() for i in range(start, end)] for p, start, end in ranges}

    created = POOL.created
    steps = [
        [(0, 500, 700)],
        [(0, 0, 100)],  # behind what the consumer fetched last
        [(0, 100, 150), (1, 900, 1000)],
        [(0, 600, 1000), (1, 0, 10)],  # a partition it paused at the end of its last range
    ]
    for ranges in steps:
        assert read(*ranges) == expected(*ranges)
    assert POOL.created == created + 1

    abandoned = read_ranges(client, [PartitionRange(topic, 1, 0, 1000)], batch_rows=64)
    next(abandoned)
    abandoned.close()
    with pytest.raises(DataLossError):
        read((0, 990, 1050))
    assert read((1, 10, 20)) == expected((1, 10, 20))
    assert POOL.created == created + 3  # the abandoned read's consumer and the failed one's
