"""One state partition's share of a batch, as its executor's publisher host sends it
(``streaming.run.publisher_host``), and the host's transactional producers, one per partition,
kept open between batches."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from streaming.kafka.transactions import TransactionalProducer
from streaming.run.changelog_records import Outgoing
from streaming.run.publication import POSITION_PARTITION, parse_position, send_batch


@dataclass(frozen=True)
class Share:
    """One state partition's share of a batch, as a task asks its executor's publisher host to
    send it (its records follow in chunks)."""

    client: dict[str, str]
    transactional_id: str  # the partition's
    group: str  # the partition's position group
    topic: str
    deployment: str
    batch_id: int
    live_since: float | None

    def sent_before(self) -> bool:
        """Whether the partition's position says this batch was published (under this switch
        of the live pointer). Opens the partition's producer in this process first."""
        writer = share_writer(self)
        position = writer.position(self.topic, POSITION_PARTITION)
        if position is None:
            return False
        return parse_position(position.metadata).covers(self.batch_id, self.live_since)

    def send(self, records: Iterable[Outgoing]) -> int:
        """Send ``records`` and the partition's position in one transaction."""
        return send_batch(
            share_writer(self), self.topic, records, self.deployment, self.batch_id, self.live_since
        )


# This process's open transactional producers (the publisher host's), by transactional id.
_WRITERS: dict[str, TransactionalProducer] = {}
_WRITERS_LOCK = threading.Lock()


def share_writer(share: Share) -> TransactionalProducer:
    """The partition's producer, kept open in this process between batches."""
    with _WRITERS_LOCK:
        writer = _WRITERS.get(share.transactional_id)
        if writer is None:
            writer = TransactionalProducer(share.client, share.transactional_id, share.group)
            _WRITERS[share.transactional_id] = writer
        return writer


def forget_writer(share: Share) -> None:
    """Close the partition's producer (it was fenced): the next use opens a fresh one."""
    with _WRITERS_LOCK:
        writer = _WRITERS.pop(share.transactional_id, None)
    if writer is not None:
        writer.close()


def close_writers() -> None:
    """Close every producer this process holds (each aborts a transaction it left open)."""
    with _WRITERS_LOCK:
        writers = list(_WRITERS.values())
        _WRITERS.clear()
    for writer in writers:
        writer.close()
