"""The log's bounds as a long-running query asks for them, trigger after trigger."""

from __future__ import annotations

import time

import pytest

from kappa.topics import ensure_topics
from streaming.kafka_log import KafkaLog
from tests.producing import Out, send

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
