"""The embedded Apache Kafka broker: where it listens, and that a kill -9 loses no record it had
acknowledged to an idempotent acks=all producer.

(`test_restart.py` does the same through `kappa up` with the whole platform around it.)
"""

from __future__ import annotations

import os
import signal

import psutil
import pytest
from confluent_kafka import Producer

from bench.support.reference import replay
from kappa.broker import EmbeddedBroker
from streaming.kafka.admin import ensure_topics
from streaming.processes import pid_alive
from streaming.wait import wait_until

pytestmark = pytest.mark.integration


def _listening(pid: int) -> set[tuple[str, int]]:
    sockets = psutil.Process(pid).net_connections(kind="tcp")
    return {(c.laddr.ip, c.laddr.port) for c in sockets if c.status == psutil.CONN_LISTEN}


def test_a_killed_broker_keeps_every_acknowledged_record_and_listens_on_loopback_only(settings):
    broker = EmbeddedBroker(settings)
    status = broker.start()
    try:
        assert status.running and "Apache Kafka" in status.describe()
        ports = {settings.broker.port, settings.broker.controller_port}
        listening = _listening(status.pid)
        assert {port for _, port in listening} >= ports
        assert {ip.removeprefix("::ffff:") for ip, port in listening if port in ports} == {
            "127.0.0.1"
        }

        ensure_topics(settings, ["t"])
        acked: list[tuple[int, int, bytes]] = []

        def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
            assert err is None, err
            acked.append((msg.partition(), msg.offset(), msg.value()))

        producer = Producer(
            {**settings.kafka.client_config(), "acks": "all", "enable.idempotence": True}
        )
        for i in range(5_000):
            producer.produce(
                "t", key=f"k{i % 97}".encode(), value=f"v{i}".encode(), on_delivery=delivered
            )
            if i % 500 == 0:
                producer.poll(0)
        assert producer.flush(30) == 0 and len(acked) == 5_000
        del producer

        os.killpg(status.pid, signal.SIGKILL)  # no clean shutdown: segments recovered at start
        assert wait_until(lambda: not pid_alive(status.pid), 30, 0.05)
        assert broker.start().running
        in_log = {
            (r.partition, r.offset): r.value for r in replay(settings.kafka.bootstrap_servers, "t")
        }
        assert {(p, o): v for p, o, v in acked} == in_log
    finally:
        broker.stop()
    assert not broker.status().running
