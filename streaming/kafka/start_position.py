"""Where a new deployment starts reading when the user gives a time instead of offsets."""

from __future__ import annotations

from confluent_kafka import TopicPartition

from streaming.errors import KafkaLogError
from streaming.kafka import offsets as off
from streaming.kafka.log import KafkaLog
from streaming.settings import KafkaSettings


def offsets_at_timestamp(
    kafka: KafkaSettings, topics: tuple[str, ...], timestamp_ms: int
) -> off.OffsetMap:
    """Per partition, the first offset whose record timestamp is at or after ``timestamp_ms``.

    Partitions with no such record start at their end (nothing to replay). On Apache Kafka this
    is ListOffsets by timestamp; the embedded tansu broker answers at record-batch granularity by
    write time, so there it is approximate.
    """
    if timestamp_ms < 0:
        msg = f"starting timestamp {timestamp_ms} must be milliseconds since the epoch (>= 0)"
        raise KafkaLogError(msg)
    with KafkaLog.of(kafka) as log:
        latest = log.latest(topics)
        wanted = [TopicPartition(t, p, timestamp_ms) for t, parts in latest.items() for p in parts]
        found = log.consumer.offsets_for_times(wanted, timeout=10)
    result: off.OffsetMap = {t: {} for t in latest}
    for tp in found:
        end = latest[tp.topic][tp.partition]
        result[tp.topic][tp.partition] = end if tp.offset < 0 else min(tp.offset, end)
    return result
