"""A class-data-sharing (CDS) archive for the embedded broker's JVM: the broker starts faster.

Most of the broker's start-up is its JVM loading and verifying Kafka's classes. Measured on the
2-core machine of the README under a load average of 7: 8.7-13.5 s to answer without an archive,
6.7-6.9 s with it. ``python -m kappa.broker_archive`` builds it once per Java and Kafka installation
(the bootstrap runs it): a throwaway broker starts, serves a topic, and writes the classes it
loaded into the archive as it stops (``-XX:ArchiveClassesAtExit``). ``kappa.broker`` maps it at
every later start. An archive that does not fit the JVM or the class path costs
nothing but the time: the JVM checks it and starts without it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from kappa.broker import QUIET_CDS, EmbeddedBroker, archive_path
from kappa.ports import free_port
from streaming.atomic_file import publish_written
from streaming.home import as_home
from streaming.jars import KAFKA_BROKER, classpath, java_binary
from streaming.kafka.admin import ensure_topics
from streaming.settings import Settings, load_settings


def build(settings: Settings) -> Path:
    """Run a throwaway broker that writes the archive when it stops; returns its path."""
    jars = classpath(settings.cache_dir, KAFKA_BROKER)
    target = archive_path(settings, java_binary(settings.spark.java_home), jars)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    work = Path(tempfile.mkdtemp(prefix="kappa-broker-archive-"))
    port, controller = free_port(), free_port()
    options = " ".join([f"-XX:ArchiveClassesAtExit={partial}", *QUIET_CDS])
    throwaway = settings.model_copy(
        update={
            "home": as_home(work),
            "broker": settings.broker.model_copy(
                update={"port": port, "controller_port": controller, "java_options": options}
            ),
            "kafka": settings.kafka.model_copy(
                update={"bootstrap_servers": f"{settings.broker.host}:{port}", "client": {}}
            ),
        }
    )
    broker = EmbeddedBroker(throwaway)
    started = time.monotonic()
    try:
        broker.start()
        _warm_up(throwaway)
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    publish_written(partial, target, "the broker's class archive")
    print(f"broker class archive: {target} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    return target


def _warm_up(settings: Settings) -> None:
    """Load the classes of what the platform asks of a broker most: create, produce, fetch."""
    ensure_topics(settings, ["warm-up"])
    client = settings.kafka.client_config()
    producer = Producer({**client, "acks": "all", "enable.idempotence": "true"})
    for i in range(100):
        producer.produce("warm-up", key=str(i).encode(), value=b"x")
    producer.flush(30)
    consumer = Consumer({**client, "group.id": "warm-up", "enable.partition.eof": True})
    consumer.assign([TopicPartition("warm-up", 0, 0)])
    consumer.consume(100, timeout=5)
    consumer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kappa.broker_archive", description=__doc__)
    parser.add_argument("--if-missing", action="store_true", help="only if there is none yet")
    args = parser.parse_args(argv)
    settings = load_settings()
    jars = classpath(settings.cache_dir, KAFKA_BROKER)
    java = java_binary(settings.spark.java_home)
    if args.if_missing and archive_path(settings, java, jars).is_file():
        return 0
    build(settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
