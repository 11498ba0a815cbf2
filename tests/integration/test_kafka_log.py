"""The log's bounds as a long-running query asks for them, trigger after trigger."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer

from kappa.testing.producing import Out, send
from streaming.kafka.admin import ensure_topics
from streaming.kafka.log import KafkaLog

pytestmark = pytest.mark.integration


def _records(n: int, tag: str) -> list[Out]:
    return [Out("t", b"k", f"{tag}{i}".encode(), partition=i % 2) for i in range(n)]


def test_bounds_follow_the_log_and_show_a_log_the_broker_lost(settings, broker):
    ensure_topics(settings, ["t"])
    send(settings, _records(600, "a"))
    with KafkaLog(settings.kafka.client_config(), earliest_ttl_s=60) as log:
        assert log.bounds(["t"])[1]["t"] == {0: 300, 1: 300, 2: 0, 3: 0}
        send(settings, _records(200, "b"))  # probed from the remembered ends now
        assert log.bounds(["t"])[1]["t"] == {0: 400, 1: 400, 2: 0, 3: 0}

        broker.stop()  # the in-memory broker forgets every topic
        broker.start()
        ensure_topics(settings, ["t"])
        send(settings, _records(100, "c"))
        started = time.monotonic()
        earliest, latest = log.bounds(["t"])
        # The shorter log shows (so the caller can stop with DATA LOSS), not a timeout.
        assert latest["t"] == {0: 50, 1: 50, 2: 0, 3: 0}
        assert earliest["t"] == {0: 0, 1: 0, 2: 0, 3: 0}
        assert time.monotonic() - started < 8


def test_list_offsets_is_exact_when_every_record_is_its_own_batch(settings, broker):
    ensure_topics(settings, ["t"])
    send(settings, _records(400, "a"), linger_ms=0, batch_records=1)
    client = settings.kafka.client_config()
    with KafkaLog(client, ends_by_fetch=False) as listing, KafkaLog(client) as probing:
        expected = {0: 200, 1: 200, 2: 0, 3: 0}
        assert listing.latest(["t"])["t"] == expected == probing.latest(["t"])["t"]
        assert listing.bounds(["t"]) == ({"t": dict.fromkeys(range(4), 0)}, {"t": expected})


def test_the_embedded_profile_measures_ends_the_broker_lists_too_short(settings, broker):
    ensure_topics(settings, ["t"])
    send(settings, _records(600, "a"), linger_ms=100)  # record batches of many records
    client = settings.kafka.client_config()
    with KafkaLog(client, ends_by_fetch=False) as listing, KafkaLog(client) as probing:
        assert sum(probing.latest(["t"])["t"].values()) == 600
        assert sum(listing.latest(["t"])["t"].values()) < 600  # tansu's ListOffsets


def test_the_auto_profile_recognises_the_embedded_broker(settings, broker):
    """Reached at an address the settings do not know as the embedded broker's, a tansu is still
    measured with a fetch: plain ListOffsets would cut every partition's tail off silently."""
    ensure_topics(settings, ["t"])
    send(settings, _records(600, "a"), linger_ms=100)
    with KafkaLog(settings.kafka.client_config(), ends_by_fetch=None) as auto:
        assert sum(auto.latest(["t"])["t"].values()) == 600
        assert sum(auto.bounds(["t"])[1]["t"].values()) == 600


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
    """Each answer covers at least what was delivered before the call: a long-lived consumer
    keeps a partition's cached high watermark between probes, and an end read from that cache
    trailed the log by one probe interval (a continuous query then ran ~1 s behind)."""
    ensure_topics(settings, ["t"])
    producing = _SteadyProducer(settings, seconds=9)
    producing.start()
    misses: list[dict[int, int]] = []
    probes = 0
    with KafkaLog(settings.kafka.client_config(), earliest_ttl_s=60) as log:
        while producing.is_alive():
            delivered = producing.ends()
            latest = log.bounds(["t"])[1]["t"]
            missing = {p: end - latest[p] for p, end in delivered.items() if latest[p] < end}
            if missing:
                misses.append(missing)
            probes += 1
            producing.join(0.3)  # paces the probes like a trigger; ends when production does
    assert probes >= 20
    assert misses == [], f"{len(misses)} of {probes} answers behind the delivered records"


def test_a_quiet_log_listed_again_and_again_keeps_its_true_end(settings, broker):
    """Re-listing (every call with a zero TTL, and every ``latest``) starts from ListOffsets,
    which the embedded broker answers inside the last record batch; the probe there must still
    find the true end, not wait for a fetch answer that never comes."""
    ensure_topics(settings, ["t"])
    send(settings, _records(600, "a"))  # batched: ListOffsets under-reports the end
    with KafkaLog(settings.kafka.client_config(), timeout_s=5, earliest_ttl_s=0) as log:
        for _ in range(3):
            assert log.bounds(["t"])[1]["t"] == {0: 300, 1: 300, 2: 0, 3: 0}
            assert log.latest(["t"])["t"] == {0: 300, 1: 300, 2: 0, 3: 0}
