"""Publishing a deployment's table changes to a Kafka topic: a compacted changelog (key, the new
row as JSON, a null value on delete: ``streaming.run.changelog_records``) that any consumer or
another pipeline reads. Which version publishes, and when a handover is due, is the rule of
``streaming.versions.publishing``: only the live version (any version while none is live), so
side-by-side versions never write into the same topic. Each record carries the headers
``kappa.deployment`` and ``kappa.batch``.

Exactly once for ``read_committed`` readers: a stateful plan's changes are published where they
are computed, before the table commits the batch. Each state partition's task sends its share
of the batch (``streaming.run.partition_publisher``) in one Kafka transaction of the partition's
own transactional producer (``transactional.id`` and group suffixed ``-p<partition>``), and that
transaction also commits the partition's published position, "batch N under live switch S": the
offset N + 1 (the next batch, as a committed offset names the next record) of the partition's
consumer group on the topic's partition 0, with ``{"batch": N, "live_since": S}`` as its
metadata. Nothing consumes with that group; its offset only carries the position. Records and
position become visible together or not at all:

- A crash before the transaction commits leaves it open. The next producer with the same
  ``transactional.id`` aborts the open transaction when it opens (and fences the old producer),
  then the position is read back without the batch, which is published again. Readers see it
  once. Until the abort, or the producer's transaction timeout (60 s) if nothing publishes the
  partition again, the open transaction holds back the topic's last stable offset: such readers
  see nothing newer meanwhile.
- A crash after the Kafka commit but before the table's: the replayed batch finds itself in the
  position and sends nothing.

The partitions' producers live in the executor's publisher host (``streaming.run.publisher_host``,
sending a ``streaming.run.partition_share``), so a producer stays open whichever Python worker
runs the task. The driver (``streaming.run.changelog_publisher``) holds the live pointer for the
batch, decides whether the deployment publishes at all, and does the handover. A reader sees
each partition's share of a batch once and whole (a batch's shares become visible one partition
at a time).

Readers with ``read_uncommitted`` see aborted records too. The transactional ids and the groups
are named after a hash of the platform home's real path, the deployment and the topic, so they
stay the same across restarts and differ between homes sharing a broker. The broker forgets a
group's offsets after ``offsets.retention.minutes`` (7 days by default) without a commit: a
deployment whose position was forgotten, or whose home moved, publishes its next batch with a
handover, which leaves the right table in the topic but may repeat records already published.

Handover: the position also records which switch of the live pointer the deployment published
under. The first batch a deployment publishes under a new switch (it was promoted, or rolled
back to) starts with a reconciliation, in a transaction of the driver's own producer (its
position: "handed over after batch N - 1 under switch S") before the partitions send their
shares: the topic is read back as a table and brought to the deployment's table at its last
commit (rows that differ are sent, keys the table lacks get a tombstone), so readers of the
topic see the new live version's whole table, history included, and not only its changes from
the switch on. Publication holds the live pointer, so a switch never lands in the middle of a
batch's publication and a version that stopped being live sends nothing after it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable

from streaming.deployment import Deployment
from streaming.errors import RunError
from streaming.kafka.transactions import TransactionalProducer
from streaming.run.changelog_records import Outgoing
from streaming.versions.publishing import Published

DEPLOYMENT_HEADER = "kappa.deployment"
BATCH_HEADER = "kappa.batch"
# The partition of the output topic on which a position group commits its position.
POSITION_PARTITION = 0


class PublicationError(RunError):
    """Changes could not be delivered to the output topic; none of the batch is visible."""


def transactional_id(deployment: Deployment, topic: str) -> str:
    """The id of the deployment's transactional producer for ``topic`` (a state partition's
    adds ``-p<partition>``)."""
    return f"kappa-{_home_tag(deployment)}-{deployment.id}-{topic}"


def position_group(deployment: Deployment) -> str:
    """The consumer group whose offsets hold the deployment's published position (a state
    partition's adds ``-p<partition>``)."""
    return f"kappa-publish-{_home_tag(deployment)}-{deployment.id}"


def _home_tag(deployment: Deployment) -> str:
    return hashlib.sha256(os.path.realpath(deployment.home).encode()).hexdigest()[:12]


def parse_position(metadata: str) -> Published:
    """The published position a group's committed metadata holds (:func:`send_batch`).

    Raises ValueError, KeyError or TypeError for metadata kappa did not write.
    """
    data = json.loads(metadata)
    since = data["live_since"]
    return Published(int(data["batch"]), None if since is None else float(since))


def send_batch(
    writer: TransactionalProducer,
    topic: str,
    records: Iterable[Outgoing],
    deployment_id: str,
    batch_id: int,
    live_since: float | None,
) -> int:
    """Send ``records`` (to ``topic``, or a routed record to its own), stamped with the
    deployment and the batch, in one transaction with the writer's position "batch
    ``batch_id`` published under switch ``live_since``" on ``topic``; returns how many were
    sent. Raises TransactionError (nothing of it visible)."""
    headers = [
        (DEPLOYMENT_HEADER, deployment_id.encode()),
        (BATCH_HEADER, str(batch_id).encode()),
    ]
    position = json.dumps({"batch": batch_id, "live_since": live_since})
    sent = 0
    with writer.transaction() as transaction:
        for record in records:
            to = record[2] if len(record) == 3 else topic
            transaction.produce(to, record[0].encode(), record[1], headers)
            sent += 1
        transaction.commit_position(topic, POSITION_PARTITION, batch_id + 1, position)
    return sent
