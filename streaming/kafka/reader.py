"""Reading one exact offset range of one partition into Arrow record batches (executor side)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Mapping, Sequence
from itertools import groupby

import numpy as np
import pyarrow as pa
from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, Message, TopicPartition

from streaming.errors import BrokerUnavailableError, DataLossError
from streaming.kafka.consumer_pool import POOL, ConsumerPool
from streaming.kafka.offsets import PartitionRange

BATCH_ROWS = 20_000
STALL_TIMEOUT_S = 60.0
# How much one fetch asks for: large fetches keep a replay's round trips few. A fetch can take
# several seconds on a loaded machine, so the socket timeout is librdkafka's default 60 s: a
# timed-out fetch is retried from scratch and never makes progress. A range ends below the log's
# end, so waiting at the end for more records (500 ms by default) never helps a read, and a
# pooled consumer's next read would wait for that fetch before its own could go out.
READ_FETCH = {
    "max.partition.fetch.bytes": str(8 << 20),
    "fetch.max.bytes": str(16 << 20),
    "socket.timeout.ms": "60000",
    "fetch.wait.max.ms": "10",
}

_HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(("headers", _HEADER_TYPE))
    return pa.schema(fields)


def kept_record_schema() -> pa.Schema:
    """What the platform keeps of a record (plans, dead letters): the source's columns without
    the timestamp type and headers."""
    return pa.schema([f for f in arrow_schema(include_headers=False) if f.name != "timestampType"])


def read_ranges(
    client: Mapping[str, str],
    ranges: Sequence[PartitionRange],
    include_headers: bool = False,
    batch_rows: int = BATCH_ROWS,
    pool: ConsumerPool = POOL,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of every range (``[start, end)`` of its partition), nothing more or
    less, through one consumer assigned to all of them, so their first fetches overlap. The
    consumer comes from ``pool``, by default this process's (``streaming.kafka.consumer_pool``).

    Each record batch holds records of one partition, in offset order.

    Raises:
        DataLossError: a log ends before its range's end or a start is out of range.
        BrokerUnavailableError: no progress for ``STALL_TIMEOUT_S``.
    """
    todo = [r for r in ranges if r.count > 0]
    if not todo:
        return
    schema = arrow_schema(include_headers)
    with pool.lease(client, **READ_FETCH) as consumer:
        consumer.assign([TopicPartition(r.topic, r.partition, r.start) for r in todo])
        for rng, messages in _consume(consumer, todo, batch_rows):
            yield to_record_batch(messages, rng, schema, include_headers)


def _consume(
    consumer: Consumer, ranges: list[PartitionRange], batch_rows: int
) -> Iterator[tuple[PartitionRange, list[Message]]]:
    """The records of ``ranges`` in lists of up to ``batch_rows`` of one partition each, errors
    handled and removed; a partition is paused once its range is complete."""
    by_key = {(r.topic, r.partition): r for r in ranges}
    next_offset = {key: r.start for key, r in by_key.items()}
    unfinished = set(by_key)
    one_topic = len({r.topic for r in ranges}) == 1
    last_progress = time.monotonic()
    while unfinished:
        # Never ask for more than what is left: consume() waits for the full count or the
        # timeout. Offsets without a record (transaction markers, aborted records) make it ask
        # for more than comes; the record past the range or the end-of-partition event ends it.
        left = sum(by_key[k].end - next_offset[k] for k in unfinished)
        messages = consumer.consume(num_messages=min(batch_rows, left), timeout=0.5)
        if not messages:
            if time.monotonic() - last_progress > STALL_TIMEOUT_S:
                at = ", ".join(f"{t}-{p} at offset {next_offset[(t, p)]}" for t, p in unfinished)
                raise BrokerUnavailableError(f"no records from {at}")
            continue
        last_progress = time.monotonic()
        # consume() hands out runs of one partition's records; split them without a lookup per
        # record when there is a single topic.
        runs = groupby(messages, key=Message.partition if one_topic else _topic_partition)
        for run_key, run in runs:
            key = (ranges[0].topic, run_key) if one_topic else run_key
            if key not in unfinished:
                continue  # fetched before its partition was paused
            rng = by_key[key]
            run_messages = list(run)
            records = [m for m in run_messages if m.error() is None]
            if len(records) < len(run_messages):
                for message in run_messages:
                    err = message.error()
                    if err is not None:
                        next_offset[key] = _handle_error(
                            err, message.offset(), rng, next_offset[key]
                        )
            if records and records[-1].offset() >= rng.end:
                # A record at or past the end: whatever offsets are left below it hold no
                # record to read (transaction markers, aborted or compacted records).
                records = [m for m in records if m.offset() < rng.end]
                next_offset[key] = rng.end
            if records:
                next_offset[key] = max(next_offset[key], records[-1].offset() + 1)
                yield rng, records
        done = [k for k in unfinished if next_offset[k] >= by_key[k].end]
        if done:
            consumer.pause([TopicPartition(t, p) for t, p in done])
            unfinished.difference_update(done)


def _topic_partition(message: Message) -> tuple[str, int]:
    return message.topic(), message.partition()


def to_record_batch(
    messages: list[Message], rng: PartitionRange, schema: pa.Schema, include_headers: bool
) -> pa.RecordBatch:
    """Columns built in bulk: one pass per field, fixed-value columns without a Python loop."""
    n = len(messages)
    # map() over the unbound methods: no per-record attribute lookup or frame.
    pairs = itertools.chain.from_iterable(map(Message.timestamp, messages))
    stamps = np.fromiter(pairs, np.int64, 2 * n).reshape(n, 2)
    has_ts = stamps[:, 0] != TIMESTAMP_NOT_AVAILABLE
    arrays = [
        pa.array(list(map(Message.key, messages)), pa.binary()),
        pa.array(list(map(Message.value, messages)), pa.binary()),
        pa.array(itertools.repeat(rng.topic, n), pa.string(), size=n),
        pa.array(np.full(n, rng.partition, np.int32)),
        pa.array(np.fromiter(map(Message.offset, messages), np.int64, n)),
        pa.array(stamps[:, 1] * 1000, pa.timestamp("us", tz="UTC"), mask=~has_ts),
        pa.array(np.maximum(stamps[:, 0] - 1, 0).astype(np.int32)),
    ]
    if include_headers:
        headers = [m.headers() for m in messages]
        arrays.append(
            pa.array(
                [[{"key": k, "value": v} for k, v in h] if h else None for h in headers],
                _HEADER_TYPE,
            )
        )
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _handle_error(err: KafkaError, offset: int, rng: PartitionRange, next_offset: int) -> int:
    if err.code() == KafkaError._PARTITION_EOF:
        if offset < rng.end:
            msg = (
                f"{rng.topic}-{rng.partition} ends at offset {offset} but the batch was planned "
                f"up to {rng.end}; the broker lost records"
            )
            raise DataLossError(msg)
        return max(next_offset, rng.end)
    if err.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
        msg = f"{rng.topic}-{rng.partition}: offset {next_offset} is out of range ({err.str()})"
        raise DataLossError(msg)
    if err.fatal() or not err.retriable():
        msg = f"reading {rng.topic}-{rng.partition} failed: {err.str()}"
        raise BrokerUnavailableError(msg)
    return next_offset
