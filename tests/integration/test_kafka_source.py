"""The Kafka data source on its own: exact ranges, starting offsets, limits, several topics."""

from __future__ import annotations

import json
import uuid

import pytest

from kappa.topics import ensure_topics
from streaming.kafka_log import KafkaLog
from streaming.kafka_source import FORMAT
from tests.producing import Out, send

pytestmark = pytest.mark.integration


def _collect(spark, settings, checkpoint, **options):  # type: ignore[no-untyped-def]
    """Run an availableNow query; return (rows, batch sizes)."""
    batches: list[int] = []
    rows: list[tuple] = []

    def sink(df, batch_id):  # type: ignore[no-untyped-def]
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
        query.awaitTermination(120)
    finally:
        query.stop()
    return rows, batches


def _records(topic: str, n: int, prefix: str = "") -> list[Out]:
    return [Out(topic, f"{prefix}{i % 37}".encode(), f"{prefix}v{i}".encode()) for i in range(n)]


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


def test_latest_and_json_starting_offsets(spark, settings, broker, tmp_path):
    ensure_topics(settings, {"b": {"cleanup.policy": "delete"}})
    send(settings, [Out("b", b"k", f"old{i}".encode(), partition=0) for i in range(10)])
    rows, _ = _collect(
        spark, settings, tmp_path / "latest", subscribe="b", startingOffsets="latest"
    )
    assert rows == []
    spec = json.dumps({"b": {"0": 7, "1": -2}})
    rows, _ = _collect(spark, settings, tmp_path / "json", subscribe="b", startingOffsets=spec)
    assert [v for *_, v in rows] == [b"old7", b"old8", b"old9"]


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
