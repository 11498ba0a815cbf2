"""Where a new deployment starts reading when the user gives a time instead of offsets."""

from __future__ import annotations

from streaming.errors import KafkaLogError
from streaming.kafka import offsets as off
from streaming.kafka.log import KafkaLog
from streaming.settings import KafkaSettings


def offsets_at_timestamp(
    kafka: KafkaSettings, topics: tuple[str, ...], timestamp_ms: int
) -> off.OffsetMap:
    """Per partition, the first offset whose record timestamp is at or after ``timestamp_ms``.

    Partitions with no such record start at their end (nothing to replay): the broker's
    ListOffsets by timestamp.
    """
    if timestamp_ms < 0:
        msg = f"starting timestamp {timestamp_ms} must be milliseconds since the epoch (>= 0)"
        raise KafkaLogError(msg)
    with KafkaLog.of(kafka) as log:
        latest = log.latest(topics)
        found = log.at_timestamp(topics, timestamp_ms)
    result: off.OffsetMap = {t: {} for t in latest}
    for topic, parts in latest.items():
        for partition, end in parts.items():
            offset = found[topic].get(partition, -1)
            result[topic][partition] = end if offset < 0 else min(offset, end)
    return result
