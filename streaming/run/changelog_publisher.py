"""The driver's side of a deployment's publication (``streaming.run.publication``): for each
batch it takes the deployment's turn on the live pointer (``streaming.versions.publishing``),
hands the topic over when the turn asks for it, and gives the batch's tasks the
:class:`PartitionPublisher` they send their shares with.

A stream output (``streaming.define.stream_output``) is published the same way, its position on
its first topic. Its handover sends nothing: the records an earlier live version sent stay
where they are, each new row of the new live version follows them, so a reader sees every
record once rather than the stream's history a second time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from streaming.define.stream_output import StreamOutput
from streaming.delta.table_reader import read_arrow
from streaming.deployment import Deployment
from streaming.errors import TableNotFoundError
from streaming.kafka.admin import ensure_topics
from streaming.kafka.log import KafkaLog
from streaming.kafka.offsets import plan_ranges
from streaming.kafka.reader import read_ranges
from streaming.kafka.transactions import TransactionalProducer, TransactionError
from streaming.run.changelog_records import Record, encoded_rows
from streaming.run.partition_publisher import PartitionPublisher
from streaming.run.publication import (
    POSITION_PARTITION,
    PublicationError,
    parse_position,
    position_group,
    send_batch,
    transactional_id,
)
from streaming.settings import Settings
from streaming.versions.publishing import Published, publishing_turn


class ChangelogPublisher:
    """Publishes one deployment's changes to ``topic``, or its new rows to the topics of its
    ``stream`` output (``topic`` the first of them); its clients are created on first use."""

    def __init__(
        self,
        settings: Settings,
        deployment: Deployment,
        topic: str,
        key: str | tuple[str, ...],
        stream: StreamOutput | None = None,
    ) -> None:
        self.settings = settings
        self.deployment = deployment
        self.topic = topic
        self.key = (key,) if isinstance(key, str) else tuple(key)
        self.stream = stream
        self.topics = [topic] if stream is None else list(stream.topics)
        # The driver's own producer: it sends the handovers.
        self._writer = TransactionalProducer(
            settings.kafka.client_config(),
            transactional_id(deployment, topic),
            position_group(deployment),
        )
        self._topic_ready = False

    def close(self) -> None:
        self._writer.close()

    def published(self) -> Published | None:
        """The driver's position: the batch after which it last handed the topic over, under
        which switch (None before any).

        Aborts first a transaction an earlier incarnation of this deployment left open.
        """
        try:
            position = self._writer.position(self.topic, POSITION_PARTITION)
        except TransactionError as exc:
            raise PublicationError(f"publishing to {self.topic!r}: {exc}") from None
        if position is None:
            return None
        try:
            return parse_position(position.metadata)
        except (ValueError, KeyError, TypeError):
            msg = (
                f"the published position of {self.deployment.id} on {self.topic!r} (group "
                f"{self._writer.group!r}, partition {POSITION_PARTITION}) is not one kappa "
                f"wrote: {position.metadata!r}; delete that group's offsets to publish the next "
                "batch with a handover"
            )
            raise PublicationError(msg) from None

    @contextmanager
    def batch(self, batch_id: int) -> Iterator[PartitionPublisher | None]:
        """Publication of batch ``batch_id`` by its state partitions' tasks, while this holds
        the live pointer: None when this version is not the one to publish; otherwise the
        handover is done first if the live pointer switched since the deployment last published
        (the topic brought to the table at its last commit, in the driver's own transaction)."""
        with publishing_turn(self.deployment) as turn:
            if turn is None:
                yield None
                return
            self._ensure_topic()
            if turn.hands_over(self.published()):
                self._hand_over(batch_id - 1, turn.live_since)
            yield PartitionPublisher(
                client=self.settings.kafka.client_config(),
                topic=self.topic,
                key=self.key,
                deployment=self.deployment.id,
                transactional_id=self._writer.transactional_id,
                group=self._writer.group,
                live_since=turn.live_since,
                batch_id=batch_id,
                stream=self.stream,
            )

    def _hand_over(self, last_batch: int, since: float | None) -> None:
        """Bring the topic to the table at its last commit, in one transaction with the
        driver's position "handed over after ``last_batch`` under switch ``since``"."""
        records = self._reconciliation() if self.stream is None else []
        try:
            send_batch(self._writer, self.topic, records, self.deployment.id, last_batch, since)
        except TransactionError as exc:
            msg = f"handing {self.topic!r} over to {self.deployment.id} failed: {exc}"
            raise PublicationError(msg) from None

    def _ensure_topic(self) -> None:
        """Create the topic once per publisher."""
        if not self._topic_ready:
            ensure_topics(self.settings, self.topics)
            self._topic_ready = True

    def _reconciliation(self) -> list[Record]:
        """What brings the topic, read back as a table, to this deployment's table at its last
        commit."""
        topic = self._topic_table()
        try:
            table = read_arrow(self.deployment.table_path)
        except TableNotFoundError:
            table = None
        records: list[Record] = []
        for key, value in [] if table is None else encoded_rows(table, self.key):
            current = topic.pop(key, None)
            if current is None or json.loads(current) != json.loads(value):
                records.append((key, value))
        records += [(key, None) for key in sorted(topic)]
        return records

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
