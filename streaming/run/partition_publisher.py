"""What a stateful plan's tasks publish their state partitions' shares of a batch with: made by
the driver for the batch (``streaming.run.changelog_publisher``), shipped to the tasks, and
sent through the executor's publisher host (``streaming.run.publisher_host``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa

from streaming.define.stream_output import StreamOutput
from streaming.run import publisher_host
from streaming.run.changelog_records import Outgoing, change_records
from streaming.run.partition_share import Share
from streaming.run.publication import PublicationError
from streaming.run.stream_records import stream_records


@dataclass(frozen=True)
class PartitionPublisher:
    """Publishes state partitions' shares of one batch, in the tasks that compute them; small
    and picklable. Each partition has its own transactional producer and position group (the
    deployment's, suffixed ``-p<partition>``), kept open between batches by the executor's
    publisher host."""

    client: Mapping[str, str]
    topic: str  # the changelog, or the stream output's first topic (it holds the position)
    key: tuple[str, ...]  # the table's key columns
    deployment: str  # its id, stamped on every record
    transactional_id: str  # the deployment's, without the partition suffix
    group: str
    live_since: float | None
    batch_id: int
    stream: StreamOutput | None = None  # where new rows go, for a stream output

    def publish(self, partition: int, changes: pa.Table) -> int:
        """Send ``partition``'s changes of the batch with its position, once
        (``streaming.run.publication``), through this executor's publisher host; returns how
        many records were sent (0 when this batch was sent before)."""
        share = self.share(partition)
        try:
            return publisher_host.publish(share, lambda: self.records(changes))
        except publisher_host.HostError as exc:
            raise PublicationError(f"publishing to {self.topic!r}: {exc}") from None

    def records(self, changes: pa.Table) -> Iterator[Outgoing]:
        """The records ``changes`` become: the changelog's, or the stream output's."""
        if self.stream is not None:
            return stream_records(changes, self.stream)
        return change_records(changes, self.key)

    def share(self, partition: int) -> Share:
        """``partition``'s share of the batch, under its own transactional id and group."""
        return Share(
            client=dict(self.client),
            transactional_id=f"{self.transactional_id}-p{partition}",
            group=f"{self.group}-p{partition}",
            topic=self.topic,
            deployment=self.deployment,
            batch_id=self.batch_id,
            live_since=self.live_since,
        )

    def prepare(self) -> None:
        """Start this executor's publisher host if it is not running, without waiting."""
        publisher_host.prepare()
