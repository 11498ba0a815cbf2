"""The log's bounds as a long-running query asks for them, trigger after trigger."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer

from bench.support.broker import delete_topics
from bench.support.producing import Out, send
from streaming.kafka.admin import ensure_topics
from streaming.kafka.log import KafkaLog
from streaming.wait import wait_until

pytestmark = pytest.mark.integration


def _records(n: int, tag: str) -> list[Out]:
    return [Out("t", b"k", f"{tag}{i}".encode(), partition=i % 2) for i in range(n)]


def test_bounds_follow_the_log_and_show_a_log_the_broker_lost(settings, broker):
    ensure_topics(settings, ["t"])
    send(settings, _records(600, "a"), linger_ms=100)  # record batches of many records
    with KafkaLog(settings.kafka.client_config()) as log:
        assert log.bounds(["t"])[1]["t"] == {0: 300, 1: 300, 2: 0, 3: 0}
        send(settings, _records(200, "b"), linger_ms=0, batch_records=1)
        assert log.bounds(["t"])[1]["t"] == {0: 400, 1: 400, 2: 0, 3: 0}

        delete_topics(settings.kafka.client_config(), ["t"])  # the log is gone
        ensure_topics(settings, ["t"])
        send(settings, _records(100, "c"))
        earliest, latest = log.bounds(["t"])
        # The shorter log shows, so the caller can stop with DATA LOSS.
        assert latest["t"] == {0: 50, 1: 50, 2: 0, 3: 0}
        assert earliest["t"] == {0: 0, 1: 0, 2: 0, 3: 0}


def test_a_missing_topic_has_no_partitions(settings, broker):
    with KafkaLog(settings.kafka.client_config()) as log:
        assert log.partitions(["nowhere"]) == {"nowhere": []}
        assert log.bounds(["nowhere"]) == ({"nowhere": {}}, {"nowhere": {}})


def test_an_open_transaction_holds_the_end_back_until_it_commits(settings, broker):
    """The platform reads committed records only: the end it plans to is the last stable
    offset, so no record below a planned end can still be aborted."""
    ensure_topics(settings, ["t"])
    send(settings, _records(10, "a"))
    producer = Producer(
        {**settings.kafka.client_config(), "transactional.id": f"test-{settings.home.root.name}"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(6):
        producer.produce("t", f"tx{i}".encode(), b"k", partition=i % 2)
    producer.flush(30)
    with KafkaLog(settings.kafka.client_config()) as log:
        assert log.latest(["t"])["t"] == {0: 5, 1: 5, 2: 0, 3: 0}
        producer.commit_transaction(30)
        # three records and a commit marker per partition, once the coordinator has written
        # the markers (after the commit returned)
        committed = {0: 9, 1: 9, 2: 0, 3: 0}
        assert wait_until(lambda: log.latest(["t"])["t"] == committed, 30, 0.05)


class _SteadyProducer(threading.Thread):
    """Produces to every partition of ``t`` while the test probes; remembers delivered ends."""

    def __init__(self, settings, seconds: float, rate: int = 4000) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({**settings.kafka.client_config(), "linger.ms": "5"})
        self.seconds, self.rate = seconds, rate
        self.lock = threading.Lock()
        self.delivered: dict[int, int] = {}

    def _on_delivery(self, err, msg) -> None:
        if err is None and msg.offset() is not None:
            with self.lock:
                end = max(self.delivered.get(msg.partition(), 0), msg.offset() + 1)
                self.delivered[msg.partition()] = end

    def ends(self) -> dict[int, int]:
        with self.lock:
            return dict(self.delivered)

    def run(self) -> None:
        started, sent = time.monotonic(), 0
        while (elapsed := time.monotonic() - started) < self.seconds:
            while sent < elapsed * self.rate:
                value = f"v{sent}".encode()
                self.producer.produce("t", value, b"k", sent % 4, on_delivery=self._on_delivery)
                sent += 1
            self.producer.poll(0.005)
        self.producer.flush(30)


def test_bounds_taken_while_records_arrive_include_every_delivered_record(settings, broker):
    """Each answer covers at least what was delivered before the call."""
    ensure_topics(settings, ["t"])
    producing = _SteadyProducer(settings, seconds=6)
    producing.start()
    misses: list[dict[int, int]] = []
    probes = 0
    with KafkaLog(settings.kafka.client_config()) as log:
        while producing.is_alive():
            delivered = producing.ends()
            latest = log.bounds(["t"])[1]["t"]
            missing = {p: end - latest[p] for p, end in delivered.items() if latest[p] < end}
            if missing:
                misses.append(missing)
            probes += 1
            producing.join(0.2)  # paces the probes like a trigger; ends when production does
    assert probes >= 20
    assert misses == [], f"{len(misses)} of {probes} answers behind the delivered records"
