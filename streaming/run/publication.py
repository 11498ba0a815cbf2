"""Publishing a deployment's table changes to a Kafka topic: a compacted changelog (key, the new
row as JSON, a null value on delete) that any consumer or another pipeline reads.

Only the live version publishes (any version while none is live: the first deployment to run
claims the live pointer), so side-by-side versions never write into the same topic. Each record
carries the headers ``kappa.deployment`` and ``kappa.batch``. A batch is published before the
table commits it, and a marker file records the last batch whose publication was flushed: a
replayed batch at or below the marker is not published again. A crash in the middle of a
publication re-sends that batch whole; the repeated records carry the same key, value and batch
header as the first ones, so a changelog reader ends with the same table.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
from confluent_kafka import Producer

from streaming.atomic_file import write_atomically
from streaming.kafka.admin import ensure_topics
from streaming.kafka.log import CLIENT_LOGGER
from streaming.run.deployment import Deployment
from streaming.settings import Settings
from streaming.versions.live_pointer import live_version

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

    def is_publisher(self) -> bool:
        """Whether this deployment writes the topic now: it is live, or no version is."""
        live = live_version(self.deployment.home, self.deployment.pipeline)
        return live is None or live == self.deployment.version

    def published(self) -> int | None:
        """The last batch whose publication was flushed, or None."""
        try:
            return int(json.loads(self.marker.read_text())["batch"])
        except FileNotFoundError:
            return None

    def publish(self, changes: pa.Table, batch_id: int) -> int:
        """Send one batch's changes (``_delete`` marks deletes); returns how many were sent."""
        if not self.is_publisher():
            return 0
        done = self.published()
        if done is not None and done >= batch_id:
            return 0
        producer = self._open()
        headers = [
            (DEPLOYMENT_HEADER, self.deployment.id.encode()),
            (BATCH_HEADER, str(batch_id).encode()),
        ]
        failures: list[str] = []

        def delivered(err: object, _msg: object) -> None:
            if err is not None:
                failures.append(str(err))

        for row in changes.to_pylist():
            deleted = row.pop("_delete")
            value = None if deleted else json.dumps(row, default=_json_number).encode()
            while True:
                try:
                    producer.produce(
                        self.topic,
                        key=str(row[self.key]).encode(),
                        value=value,
                        headers=headers,
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        if producer.flush(30) or failures:
            msg = f"publishing batch {batch_id} to {self.topic!r} failed: {failures[:1]}"
            raise PublicationError(msg)
        write_atomically(self.marker, json.dumps({"batch": batch_id}))
        return changes.num_rows

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


def _json_number(value: Any) -> Any:
    """Decimals as JSON numbers (their shortest float form, exact up to 15 digits)."""
    if isinstance(value, Decimal):
        return float(value)
    msg = f"cannot publish a value of type {type(value).__name__}"
    raise TypeError(msg)
