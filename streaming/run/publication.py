"""Publishing a deployment's table changes to a Kafka topic: a compacted changelog (key, the new
row as JSON, a null value on delete) that any consumer or another pipeline reads.

Only the live version publishes (any version while none is live: the first deployment to run
claims the live pointer), so side-by-side versions never write into the same topic. Each record
carries the headers ``kappa.deployment`` and ``kappa.batch``. A batch is published before the
table commits it, and a marker file records the last batch whose publication was flushed: a
replayed batch at or below the marker is not published again. A crash in the middle of a
publication re-sends that batch whole; the repeated records carry the same key, value and batch
header as the first ones, so a changelog reader ends with the same table.

Handover: the marker also records which switch of the live pointer the deployment published
under. The first batch a deployment publishes under a new switch (it was promoted, or rolled
back to) starts with a reconciliation: the topic is read back as a table and brought to the
deployment's table at its last commit (rows that differ are sent, keys the table lacks get a
tombstone), so readers of the topic see the new live version's whole table, history included,
and not only its changes from the switch on. Publication holds the live pointer, so a switch
never lands in the middle of a batch's publication and a version that stopped being live sends
nothing after it.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
from confluent_kafka import Producer

from streaming.atomic_file import write_atomically
from streaming.delta.table_reader import read_arrow
from streaming.errors import TableNotFoundError
from streaming.kafka.admin import ensure_topics
from streaming.kafka.log import CLIENT_LOGGER, KafkaLog
from streaming.kafka.offsets import plan_ranges
from streaming.kafka.reader import read_ranges
from streaming.run.deployment import Deployment
from streaming.settings import Settings
from streaming.versions.live_pointer import pointer_held, read_live

DEPLOYMENT_HEADER = "kappa.deployment"
BATCH_HEADER = "kappa.batch"


class PublicationError(RuntimeError):
    """Changes could not be delivered to the output topic."""


class ChangelogPublisher:
    """Publishes one deployment's changes to ``topic``; the producer is created on first use."""

    def __init__(self, settings: Settings, deployment: Deployment, topic: str, key: str) -> None:
        self.settings = settings
        self.deployment = deployment
        self.topic = topic
        self.key = key
        self.marker = deployment.home.publication(deployment.id)
        self._producer: Producer | None = None

    def _marker(self) -> tuple[int | None, float | None]:
        """(last flushed batch, the live pointer's switch it was published under)."""
        try:
            data = json.loads(self.marker.read_text())
        except FileNotFoundError:
            return None, None
        since = data.get("live_since")
        return int(data["batch"]), None if since is None else float(since)

    def publish(self, changes: pa.Table, batch_id: int) -> int:
        """Send one batch's changes (``_delete`` marks deletes), after the reconciliation of a
        handover (module docstring); returns how many records were sent."""
        home, pipeline = self.deployment.home, self.deployment.pipeline
        with pointer_held(home, pipeline):
            live = read_live(home, pipeline)
            # The live version writes the topic; any version does while none is live.
            if live is not None and live.version != self.deployment.version:
                return 0
            since = None if live is None else live.since
            done, published_under = self._marker()
            handover = done is None or published_under != since
            if not handover and done is not None and done >= batch_id:
                return 0
            producer = self._open()
            headers = [
                (DEPLOYMENT_HEADER, self.deployment.id.encode()),
                (BATCH_HEADER, str(batch_id).encode()),
            ]
            # A handover brings the topic to the last commit, so this batch always follows it.
            sent = self._reconcile(producer, headers) if handover else 0
            sent += self._send(producer, headers, changes, batch_id)
            write_atomically(self.marker, json.dumps({"batch": batch_id, "live_since": since}))
            return sent

    def _send(self, producer: Producer, headers: list, changes: pa.Table, batch_id: int) -> int:
        records = []
        for row in changes.to_pylist():
            deleted = row.pop("_delete")
            records.append((row[self.key], None if deleted else _encode(row)))
        self._produce(producer, headers, records, f"batch {batch_id}")
        return len(records)

    def _reconcile(self, producer: Producer, headers: list) -> int:
        """Bring the topic, read back as a table, to this deployment's table at its last commit."""
        topic = self._topic_table()
        try:
            rows = read_arrow(self.deployment.table_path).to_pylist()
        except TableNotFoundError:
            rows = []
        records: list[tuple[Any, bytes | None]] = []
        for row in rows:
            key = str(row[self.key])
            value = _encode(row)
            current = topic.pop(key, None)
            if current is None or json.loads(current) != json.loads(value):
                records.append((key, value))
        records += [(key, None) for key in sorted(topic)]
        self._produce(producer, headers, records, "the handover")
        return len(records)

    def _topic_table(self) -> dict[str, bytes]:
        """The topic read back as a table: per key its last value; a tombstone deletes."""
        with KafkaLog.of(self.settings.kafka) as log:
            earliest, latest = log.bounds([self.topic])
        table: dict[str, bytes] = {}
        ranges = plan_ranges(earliest, latest)
        for batch in read_ranges(self.settings.kafka.client_config(), ranges):
            for key, value in zip(
                batch.column("key").to_pylist(), batch.column("value").to_pylist(), strict=True
            ):
                name = key.decode() if key is not None else ""
                if value is None:
                    table.pop(name, None)
                else:
                    table[name] = value
        return table

    def _produce(
        self, producer: Producer, headers: list, records: list[tuple[Any, bytes | None]], what: str
    ) -> None:
        failures: list[str] = []

        def delivered(err: object, _msg: object) -> None:
            if err is not None:
                failures.append(str(err))

        for key, value in records:
            while True:
                try:
                    producer.produce(
                        self.topic,
                        key=str(key).encode(),
                        value=value,
                        headers=headers,
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        if producer.flush(30) or failures:
            msg = f"publishing {what} to {self.topic!r} failed: {failures[:1]}"
            raise PublicationError(msg)

    def _open(self) -> Producer:
        if self._producer is None:
            ensure_topics(self.settings, [self.topic])
            self._producer = Producer(
                {
                    **self.settings.kafka.client_config(),
                    "enable.idempotence": "true",
                    "acks": "all",
                    "linger.ms": "5",
                    "logger": CLIENT_LOGGER,
                }
            )
        return self._producer


def _encode(row: dict[str, Any]) -> bytes:
    return json.dumps(row, default=_json_number).encode()


def _json_number(value: Any) -> Any:
    """Decimals as JSON numbers (their shortest float form, exact up to 15 digits)."""
    if isinstance(value, Decimal):
        return float(value)
    msg = f"cannot publish a value of type {type(value).__name__}"
    raise TypeError(msg)
