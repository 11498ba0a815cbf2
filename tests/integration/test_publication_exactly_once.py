"""A published batch is seen once by ``read_committed`` readers across crashes, published the way
a running deployment publishes: the driver takes the batch's turn (``ChangelogPublisher.batch``)
and a worker sends a state partition's share through its executor's publisher host.

A publication whose host died before its Kafka commit is aborted and published again by the
next host; a batch already committed to Kafka (the table's commit never happened) is not sent
again when replayed, and the driver's earlier incarnation can no longer hand the topic over. The
crash is a real one: the host holding the open transaction is killed by SIGKILL. A state
partition's share is seen once too when its batches are published by one worker process, then
another, then the first again (Spark hands a batch's task any idle worker)."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from decimal import Decimal

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, TopicPartition
from deltalake import write_deltalake

from streaming.deployment import Deployment
from streaming.processes import pid_alive
from streaming.run import publisher_host
from streaming.run.changelog_publisher import ChangelogPublisher
from streaming.run.publication import (
    POSITION_PARTITION,
    PublicationError,
    parse_position,
    position_group,
)
from streaming.settings import REPO_ROOT, Settings
from streaming.versions.live_pointer import claim_first, read_live, switch
from streaming.versions.publishing import Published
from streaming.wait import wait_until
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
PARTITION = 3

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

# A worker whose records stop coming after the first chunk: the host has sent them in the
# partition's transaction and waits for the rest, with the transaction open.
STALLED_WORKER = textwrap.dedent(
    """
    import pickle, sys, threading

    from streaming.run import partition_publisher, publisher_host
    from tests.integration.test_publication_exactly_once import changes

    encode = partition_publisher.change_records


    def stalled(table, key):
        yield from encode(table, key)
        threading.Event().wait()  # never sends the end of the share


    partition_publisher.change_records = stalled
    publisher_host.CHUNK_RECORDS = len(changes(1))  # the whole batch in the first chunk
    publisher = pickle.loads(sys.stdin.buffer.read())
    publisher.publish(int(sys.argv[1]), changes(publisher.batch_id))
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


def _driver(settings: Settings) -> ChangelogPublisher:
    """The deployment's driver publisher as a new incarnation (after a restart) creates it."""
    return ChangelogPublisher(settings, Deployment(PIPELINE, "v1", settings.home), TOPIC, KEY)


def _publish(driver: ChangelogPublisher, batch: int, here: bool = True) -> int:
    """Publish batch ``batch``'s share of PARTITION as a running deployment does: the driver
    takes the batch's turn and a worker (this process, or another) sends the share."""
    with driver.batch(batch) as publisher:
        assert publisher is not None
        if here:
            return publisher.publish(PARTITION, changes(batch))
        return int(in_other_process(driver.settings, OTHER_WORKER, publisher, str(PARTITION)))


def _partition_position(settings: Settings) -> Published | None:
    """PARTITION's committed published position, read by a plain consumer of its group (the
    deployment's position group, suffixed with the partition)."""
    group = f"{position_group(Deployment(PIPELINE, 'v1', settings.home))}-p{PARTITION}"
    consumer = Consumer({"bootstrap.servers": settings.kafka.bootstrap_servers, "group.id": group})
    try:
        [found] = consumer.committed([TopicPartition(TOPIC, POSITION_PARTITION)], 30)
    finally:
        consumer.close()
    return parse_position(found.metadata) if found.offset >= 0 else None


def _crash_while_publishing(settings: Settings, batch: int) -> None:
    """Batch ``batch``'s share, sent by a worker of this process's executor, dies with the
    executor's publisher host after its records are delivered, before its Kafka commit."""
    driver = _driver(settings)
    with driver.batch(batch) as publisher:
        assert publisher is not None
        worker = subprocess.Popen(
            [sys.executable, "-c", STALLED_WORKER, str(PARTITION)],
            stdin=subprocess.PIPE,
            env={**os.environ, **settings.to_env()},
            cwd=REPO_ROOT,
        )
        try:
            assert worker.stdin is not None
            worker.stdin.write(pickle.dumps(publisher))
            worker.stdin.close()

            def delivered() -> bool:  # every record of the share is in the log
                logged = replay_published(settings, TOPIC, "read_uncommitted")
                return sum(r.batch == batch for r in logged) == len(changes(batch))

            assert wait_until(delivered, 60), "the stalled worker's records never reached Kafka"
            host = publisher_host.host_pid(os.getpid())  # the worker's executor is this process
            assert host is not None
            os.kill(host, signal.SIGKILL)
            assert wait_until(lambda: not pid_alive(host), 30)
        finally:
            worker.kill()
            worker.wait(timeout=30)
    driver.close()


def _since(settings: Settings) -> float:
    live = read_live(settings.home, PIPELINE)
    assert live is not None
    return live.since


def test_a_publication_that_died_before_its_commit_is_seen_once(settings, broker):
    claim_first(settings.home, PIPELINE, "v1", "first deployment")
    first = _driver(settings)
    assert _publish(first, 0) == ROWS
    assert _partition_position(settings) == Published(0, _since(settings))
    first.close()

    _crash_while_publishing(settings, 1)
    # The dead host's records of batch 1 are in the log, and no reader sees them.
    logged = published_once(replay_published(settings, TOPIC, "read_uncommitted"), DEPLOYMENT)
    assert logged == {0: ROWS, 1: ROWS + 1}
    assert published_once(replay_published(settings, TOPIC), DEPLOYMENT) == {0: ROWS}

    # The restarted deployment's next host opens the partition's producer, which aborts the
    # transaction the dead one left open; the position it reads back says batch 0.
    restarted = _driver(settings)
    assert _publish(restarted, 1, here=False) == ROWS + 1
    assert _partition_position(settings) == Published(1, _since(settings))

    seen = committed_records(settings, TOPIC, DEPLOYMENT, {0: ROWS, 1: ROWS + 1})
    assert published_once(seen, DEPLOYMENT) == {0: ROWS, 1: ROWS + 1}
    # Batch 1 is twice in the log: the aborted copy, which readers skip, and the committed one.
    logged = replay_published(settings, TOPIC, "read_uncommitted")
    assert Counter((r.batch, r.key) for r in logged) == {
        (r.batch, r.key): 2 if r.batch == 1 else 1 for r in seen
    }
    restarted.close()


def _table_of_batches(settings: Settings, batches: int) -> None:
    """The deployment's table after ``batches`` batches, as its commits would leave it."""
    rows: dict[str, dict] = {}
    for batch in range(batches):
        for row in changes(batch).to_pylist():
            if row.pop("_delete"):
                rows.pop(row[KEY], None)
            else:
                rows[row[KEY]] = row
    schema = changes(0).schema.remove(changes(0).schema.get_field_index("_delete"))
    table = pa.Table.from_pylist(list(rows.values()), schema=schema)
    write_deltalake(str(Deployment(PIPELINE, "v1", settings.home).table_path), table)


def test_a_replayed_batch_already_committed_to_kafka_sends_nothing(settings, broker):
    claim_first(settings.home, PIPELINE, "v1", "first deployment")
    first = _driver(settings)
    assert _publish(first, 0) == ROWS
    assert _publish(first, 1) == ROWS + 1
    logged = replay_published(settings, TOPIC, "read_uncommitted")

    # The process died after batch 1's Kafka commit, before the table's: batch 1 is replayed.
    replayed = _driver(settings)
    assert _publish(replayed, 1) == 0
    assert _publish(replayed, 0) == 0
    assert replay_published(settings, TOPIC, "read_uncommitted") == logged

    # The old incarnation is fenced: it can no longer hand the topic over. A rollback to v1
    # asks for a handover; the table equals the topic, so the new incarnation's sends nothing.
    _table_of_batches(settings, 2)
    switch(settings.home, PIPELINE, "v2", "promote", expect_from="v1")
    switch(settings.home, PIPELINE, "v1", "rollback", expect_from="v2")
    with pytest.raises(PublicationError, match="fenced"), first.batch(2):
        pass
    assert _publish(replayed, 2) == ROWS + 1
    expected = {0: ROWS, 1: ROWS + 1, 2: ROWS + 1}
    seen = committed_records(settings, TOPIC, DEPLOYMENT, expected)
    assert published_once(seen, DEPLOYMENT) == expected
    assert replayed.published() == Published(1, _since(settings))  # handed over after batch 1
    assert _partition_position(settings) == Published(2, _since(settings))
    replayed.close()


def test_a_partition_published_by_one_worker_then_another_is_seen_once(settings, broker):
    claim_first(settings.home, PIPELINE, "v1", "first deployment")
    driver = _driver(settings)
    sent: dict[int, int] = {}
    # Batches 0 and 2 here, 1 in another worker (its producer fences this one's), then batch 2
    # replayed there (its commit "failed"), then batch 3 here again.
    for batch, here in [(0, True), (1, False), (2, True), (2, False), (3, True)]:
        sent[batch] = sent.get(batch, 0) + _publish(driver, batch, here)

    expected = {0: ROWS, 1: ROWS + 1, 2: ROWS + 1, 3: ROWS + 1}
    assert sent == expected
    seen = committed_records(settings, TOPIC, DEPLOYMENT, expected)
    assert published_once(seen, DEPLOYMENT) == expected
    # And no aborted copy of a batch is in the log either.
    assert replay_published(settings, TOPIC, "read_uncommitted") == seen
    driver.close()
