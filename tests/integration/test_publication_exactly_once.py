"""A published batch is seen once by ``read_committed`` readers across crashes of its publisher:
a publication that died before its Kafka commit is aborted and published again by the next
incarnation, and a batch already committed to Kafka (the table's commit never happened) is not
sent again when replayed. The crash is a real one: a child process killed by SIGKILL. A state
partition's share is seen once too when its batches are published by one worker process, then
another, then the first again (Spark hands a batch's task any idle worker)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from decimal import Decimal

import pyarrow as pa
import pytest

from streaming.deployment import Deployment
from streaming.run.publication import (
    ChangelogPublisher,
    PublicationError,
    Published,
)
from streaming.settings import REPO_ROOT, Settings
from streaming.versions.live_pointer import claim_first, read_live
from tests.integration.helpers import (
    committed_records,
    in_other_process,
    published_once,
    replay_published,
)

pytestmark = pytest.mark.integration

PIPELINE, TOPIC, KEY = "fraud_alerts", "fraud_alerts", "txn_id"
DEPLOYMENT = f"{PIPELINE}__v1"
ROWS = 40

# The publisher of batch N in a child process that dies by SIGKILL as soon as the batch's records
# are delivered to the broker: the last thing the process did was produce them.
CRASHING_PUBLISHER = textwrap.dedent(
    """
    import os, signal, sys

    import streaming.kafka.transactions as transactions
    from streaming.deployment import Deployment
    from streaming.run.publication import ChangelogPublisher
    from streaming.settings import load_settings
    from tests.integration.test_publication_exactly_once import KEY, PIPELINE, TOPIC, changes


    class DiesOnceDelivered(transactions.Producer):
        def flush(self, *args):
            left = super().flush(*args)
            os.kill(os.getpid(), signal.SIGKILL)
            return left


    transactions.Producer = DiesOnceDelivered
    settings = load_settings()
    deployment = Deployment(PIPELINE, "v1", settings.home)
    batch = int(sys.argv[1])
    ChangelogPublisher(settings, deployment, TOPIC, KEY).publish(changes(batch), batch)
    """
)

# Another worker process: publishes its share of the pickled partition publisher's batch, as a
# Spark task does with the publisher the driver shipped to it.
OTHER_WORKER = textwrap.dedent(
    """
    import pickle, sys

    from tests.integration.test_publication_exactly_once import changes

    publisher = pickle.loads(sys.stdin.buffer.read())
    print(publisher.publish(int(sys.argv[1]), changes(publisher.batch_id)))
    """
)


def changes(batch: int) -> pa.Table:
    """Batch ``batch``'s changes: ROWS new keys, and the delete of one key of the batch before."""
    keys = [f"t{batch}-{i}" for i in range(ROWS)] + ([f"t{batch - 1}-0"] if batch else [])
    return pa.table(
        {
            KEY: keys,
            "amount": pa.array(
                [Decimal(f"{batch}.{i % 100:02d}") for i in range(len(keys))], pa.decimal128(18, 2)
            ),
            "_delete": [False] * ROWS + [True] * (len(keys) - ROWS),
        }
    )


def _publisher(settings: Settings) -> ChangelogPublisher:
    """The deployment's publisher as a new incarnation (after a restart) creates it."""
    return ChangelogPublisher(settings, Deployment(PIPELINE, "v1", settings.home), TOPIC, KEY)


def _crash_while_publishing(settings: Settings, batch: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CRASHING_PUBLISHER, str(batch)],
        env={**os.environ, **settings.to_env()},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]


def _since(settings: Settings) -> float:
    live = read_live(settings.home, PIPELINE)
    assert live is not None
    return live.since


def test_a_publication_that_died_before_its_commit_is_seen_once(settings, broker):
    claim_first(settings.home, PIPELINE, "v1", "first deployment")
    first = _publisher(settings)
    assert first.publish(changes(0), 0) == ROWS
    first.close()

    _crash_while_publishing(settings, 1)
    # The dead publisher's records of batch 1 are in the log, and no reader sees them.
    logged = published_once(replay_published(settings, TOPIC, "read_uncommitted"), DEPLOYMENT)
    assert logged == {0: ROWS, 1: ROWS + 1}
    assert published_once(replay_published(settings, TOPIC), DEPLOYMENT) == {0: ROWS}

    restarted = _publisher(settings)  # aborts the transaction the dead one left open
    assert restarted.published() == Published(0, _since(settings))
    assert restarted.publish(changes(1), 1) == ROWS + 1
    assert restarted.published() == Published(1, _since(settings))

    seen = committed_records(settings, TOPIC, DEPLOYMENT, {0: ROWS, 1: ROWS + 1})
    assert published_once(seen, DEPLOYMENT) == {0: ROWS, 1: ROWS + 1}
    # Batch 1 is twice in the log: the aborted copy, which readers skip, and the committed one.
    logged = replay_published(settings, TOPIC, "read_uncommitted")
    assert Counter((r.batch, r.key) for r in logged) == {
        (r.batch, r.key): 2 if r.batch == 1 else 1 for r in seen
    }
    restarted.close()


def test_a_replayed_batch_already_committed_to_kafka_sends_nothing(settings, broker):
    claim_first(settings.home, PIPELINE, "v1", "first deployment")
    first = _publisher(settings)
    assert first.publish(changes(0), 0) == ROWS
    assert first.publish(changes(1), 1) == ROWS + 1
    logged = replay_published(settings, TOPIC, "read_uncommitted")

    # The process died after batch 1's Kafka commit, before the table's: batch 1 is replayed.
    replayed = _publisher(settings)
    assert replayed.publish(changes(1), 1) == 0
    assert replayed.publish(changes(0), 0) == 0
    assert replay_published(settings, TOPIC, "read_uncommitted") == logged

    # The old incarnation is fenced: it can no longer publish anything.
    with pytest.raises(PublicationError, match="fenced"):
        first.publish(changes(2), 2)
    assert replayed.publish(changes(2), 2) == ROWS + 1
    expected = {0: ROWS, 1: ROWS + 1, 2: ROWS + 1}
    seen = committed_records(settings, TOPIC, DEPLOYMENT, expected)
    assert published_once(seen, DEPLOYMENT) == expected
    assert replayed.published() == Published(2, _since(settings))
    replayed.close()


def test_a_partition_published_by_one_worker_then_another_is_seen_once(settings, broker):
    claim_first(settings.home, PIPELINE, "v1", "first deployment")
    driver = _publisher(settings)
    partition = 3
    sent: dict[int, int] = {}
    # Batches 0 and 2 here, 1 in another worker (its producer fences this one's), then batch 2
    # replayed there (its commit "failed"), then batch 3 here again.
    for batch, here in [(0, True), (1, False), (2, True), (2, False), (3, True)]:
        with driver.batch(batch) as publisher:
            assert publisher is not None
            if here:
                count = publisher.publish(partition, changes(batch))
            else:
                count = int(in_other_process(settings, OTHER_WORKER, publisher, str(partition)))
        sent[batch] = sent.get(batch, 0) + count

    expected = {0: ROWS, 1: ROWS + 1, 2: ROWS + 1, 3: ROWS + 1}
    assert sent == expected
    seen = committed_records(settings, TOPIC, DEPLOYMENT, expected)
    assert published_once(seen, DEPLOYMENT) == expected
    # And no aborted copy of a batch is in the log either.
    assert replay_published(settings, TOPIC, "read_uncommitted") == seen
    driver.close()
