"""Stopping the embedded broker on its memory engine does not wait out its connected clients.

tansu drains on SIGTERM: it waits up to 5 s for every client connection to close. The memory
engine's log is lost on stop anyway, so the platform stops it at once (SIGINT), which every
test teardown and every Ctrl-C of a memory-engine `kappa up` would otherwise pay.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer

from kappa.broker import EmbeddedBroker, port_open
from streaming.settings import Settings

pytestmark = pytest.mark.integration

DRAIN_S = 5.0  # how long tansu waits for connected clients after SIGTERM


def test_a_memory_broker_stops_without_waiting_for_its_connected_clients(settings: Settings):
    broker = EmbeddedBroker(settings)
    broker.start()
    client = Consumer({**settings.kafka.client_config(), "group.id": "stop-test"})
    try:
        assert client.list_topics(timeout=10) is not None  # connected, and stays so
        started = time.monotonic()
        assert broker.stop()
        elapsed = time.monotonic() - started
    finally:
        client.close()
    assert elapsed < DRAIN_S / 2, f"stop waited {elapsed:.1f} s for a connected client"
    assert not broker.status().running
    assert not port_open(settings.broker.host, settings.broker.port)
