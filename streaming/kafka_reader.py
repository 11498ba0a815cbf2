"""Reading one exact offset range of one partition into Arrow record batches (executor side)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, TopicPartition

from streaming.errors import BrokerUnavailableError, DataLossError
from streaming.kafka_log import consumer_config
from streaming.offsets import PartitionRange

BATCH_ROWS = 20_000
STALL_TIMEOUT_S = 60.0

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


def read_range(
    client: Mapping[str, str],
    rng: PartitionRange,
    include_headers: bool = False,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``rng`` (``[start, end)``) in offset order, nothing more or less.

    Raises:
        DataLossError: the log ends before ``rng.end`` or ``rng.start`` is out of range.
        BrokerUnavailableError: no progress for ``STALL_TIMEOUT_S``.
    """
    if rng.count == 0:
        return
    schema = arrow_schema(include_headers)
    consumer = Consumer(consumer_config(client, **{"fetch.max.bytes": "52428800"}))
    try:
        consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        yield from _consume(consumer, rng, schema, include_headers, batch_rows)
    finally:
        consumer.close()


def _consume(
    consumer: Consumer,
    rng: PartitionRange,
    schema: pa.Schema,
    include_headers: bool,
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    columns = _Columns(include_headers)
    next_offset = rng.start
    last_progress = time.monotonic()
    while next_offset < rng.end:
        messages = consumer.consume(num_messages=batch_rows, timeout=0.5)
        if not messages:
            if time.monotonic() - last_progress > STALL_TIMEOUT_S:
                msg = f"no records from {rng.topic}-{rng.partition} at offset {next_offset}"
                raise BrokerUnavailableError(msg)
            continue
        last_progress = time.monotonic()
        for message in messages:
            err = message.error()
            if err is not None:
                next_offset = _handle_error(err, message.offset(), rng, next_offset)
                continue
            offset = message.offset()
            if offset >= rng.end:
                next_offset = rng.end
                break
            columns.add(message)
            next_offset = offset + 1
        if len(columns) >= batch_rows:
            yield columns.flush(schema)
    if len(columns):
        yield columns.flush(schema)


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


class _Columns:
    """Column buffers for one record batch."""

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self._reset()

    def _reset(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.topics: list[str] = []
        self.partitions: list[int] = []
        self.offsets: list[int] = []
        self.timestamps: list[int | None] = []
        self.ts_types: list[int] = []
        self.headers: list[list[tuple[str, bytes | None]] | None] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, message: object) -> None:
        self.keys.append(message.key())  # type: ignore[attr-defined]
        self.values.append(message.value())  # type: ignore[attr-defined]
        self.topics.append(message.topic())  # type: ignore[attr-defined]
        self.partitions.append(message.partition())  # type: ignore[attr-defined]
        self.offsets.append(message.offset())  # type: ignore[attr-defined]
        ts_type, ts = message.timestamp()  # type: ignore[attr-defined]
        self.timestamps.append(ts * 1000 if ts_type else None)
        self.ts_types.append(max(0, ts_type - 1))
        if self.include_headers:
            raw = message.headers()  # type: ignore[attr-defined]
            self.headers.append([{"key": k, "value": v} for k, v in raw] if raw else None)

    def flush(self, schema: pa.Schema) -> pa.RecordBatch:
        arrays = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.array(self.topics, pa.string()),
            pa.array(self.partitions, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.timestamp("us", tz="UTC")),
            pa.array(self.ts_types, pa.int32()),
        ]
        if self.include_headers:
            arrays.append(pa.array(self.headers, _HEADER_TYPE))
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        self._reset()
        return batch
