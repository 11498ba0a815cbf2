"""The embedded broker: Apache Kafka in KRaft mode, one node that is its own controller.

It runs from the jars the bootstrap resolved (``streaming.jars``), in its own process group,
bound to 127.0.0.1, with its configuration, log and pid under the platform home
(``Home.broker``). The log directory is formatted on first start with a cluster id kept beside
it. Stopping sends SIGTERM, on which Kafka shuts down cleanly (flushes and closes its segments);
a broker killed instead recovers its log at the next start, keeping every record it had written.
"""

from __future__ import annotations

import base64
import hashlib
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kappa.errors import BrokerError
from streaming.jars import KAFKA_BROKER, classpath, java_binary
from streaming.processes import pid_alive, port_open, stop_process_group
from streaming.settings import Settings

# Settings every embedded broker runs with; the listeners, the log directory and the topic
# defaults are added from the platform settings. One node: every internal topic has one replica.
# Records are kept forever and topics are only created on purpose: the log is the source of
# truth, and a typo in a topic name must fail rather than start an empty log.
FIXED_SERVER_CONFIG = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "auto.create.topics.enable": "false",
    "delete.topic.enable": "true",
    "log.retention.ms": "-1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "4",
}
# Kafka's own logging, to stdout (the broker's log file); WARN for the chatty request loggers.
LOG4J2 = """\
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.request.logger
        level: WARN
      - name: org.apache.kafka.controller
        level: WARN
"""
MAIN_CLASS = "kafka.Kafka"
# A class archive that does not fit is skipped silently rather than warned about on every start.
QUIET_CDS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
STORAGE_TOOL = "kafka.tools.StorageTool"


@dataclass(frozen=True)
class BrokerStatus:
    running: bool
    pid: int | None
    address: str
    log_dir: Path
    log_file: Path

    def describe(self) -> str:
        if self.running:
            return (
                f"broker running (Apache Kafka, KRaft; pid {self.pid}) on {self.address}; "
                f"log data in {self.log_dir}; process log {self.log_file}"
            )
        return f"broker not running (expected on {self.address}; log data in {self.log_dir})"


class EmbeddedBroker:
    """Start, stop and inspect the embedded broker described by ``settings.broker``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._home = settings.home
        self.pid_file = settings.home.broker_pid
        self.log_file = settings.home.log("broker")

    @property
    def address(self) -> str:
        return self.settings.broker.address

    def status(self) -> BrokerStatus:
        pid = self._live_pid()
        return BrokerStatus(
            pid is not None, pid, self.address, self._home.broker_data, self.log_file
        )

    def start(self, timeout_s: float = 60.0) -> BrokerStatus:
        """Start the broker unless it already runs; return once it answers metadata requests."""
        current = self.status()
        if current.running:
            return current
        broker = self.settings.broker
        for port in (broker.port, broker.controller_port):
            if port_open(broker.host, port):
                msg = (
                    f"port {port} on {broker.host} is already in use by another process; stop it "
                    "or set KAPPA_BROKER_PORT / KAPPA_BROKER_CONTROLLER_PORT to free ports"
                )
                raise BrokerError(msg)
        jars = classpath(self.settings.cache_dir, KAFKA_BROKER)
        config = self._write_config()
        self._format_once(jars, config)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(
                [*self._java(jars), MAIN_CLASS, str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                msg = f"the broker exited with code {proc.returncode}; see {self.log_file}"
                raise BrokerError(msg)
            if port_open(broker.host, broker.port) and self._answers():
                return self.status()
            time.sleep(0.1)
        self.stop()
        msg = f"the broker did not answer on {self.address} within {timeout_s:.0f} s"
        raise BrokerError(f"{msg}; see {self.log_file}")

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the broker's process group (a clean shutdown, SIGKILL after ``timeout_s``);
        True if it was running."""
        pid = self._live_pid()
        if pid is not None:
            stop_process_group(pid, timeout_s, signal.SIGTERM)
        self.pid_file.unlink(missing_ok=True)
        return pid is not None

    # -- internals -------------------------------------------------------------------------

    def _java(self, jars: list[Path]) -> list[str]:
        java = java_binary(self.settings.spark.java_home)
        heap = self.settings.broker.heap
        return [
            java,
            *archive_options(self.settings, java, jars),
            *self.settings.broker.java_options.split(),
            f"-Xmx{heap}",
            f"-Xms{min_heap(heap)}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self._home.broker / 'log4j2.yaml'}",
            "-cp",
            os.pathsep.join(str(j) for j in jars),
        ]

    def _write_config(self) -> Path:
        """Write ``server.properties`` and the logging configuration under the home."""
        broker, kafka = self.settings.broker, self.settings.kafka
        values = {
            **FIXED_SERVER_CONFIG,
            "listeners": (
                f"PLAINTEXT://{broker.host}:{broker.port},"
                f"CONTROLLER://{broker.host}:{broker.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://{broker.host}:{broker.port}",
            "controller.quorum.voters": f"1@{broker.host}:{broker.controller_port}",
            "log.dirs": str(self._home.broker_data),
            "num.partitions": str(kafka.topic_partitions),
        }
        self._home.broker.mkdir(parents=True, exist_ok=True)
        (self._home.broker / "log4j2.yaml").write_text(LOG4J2)
        path = self._home.broker / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
        return path

    def _format_once(self, jars: list[Path], config: Path) -> None:
        """Format the log directory with this home's cluster id, unless it already is."""
        data = self._home.broker_data
        if (data / "meta.properties").is_file():
            return
        id_file = self._home.broker / "cluster.id"
        if not id_file.is_file():
            id_file.write_text(new_cluster_id())
        cmd = [
            *self._java(jars),
            STORAGE_TOOL,
            "format",
            "--ignore-formatted",
            "-t",
            id_file.read_text().strip(),
            "-c",
            str(config),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
            msg = f"could not format the broker's log directory {data}: {tail}"
            raise BrokerError(msg)

    def _answers(self) -> bool:
        admin = AdminClient({**self.settings.kafka.client_config(), "socket.timeout.ms": "2000"})
        try:
            return bool(admin.list_topics(timeout=2.0).brokers)
        except KafkaException:
            return False

    def _live_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if pid_alive(pid) else None


def archive_path(settings: Settings, java: str, jars: list[Path]) -> Path:
    """Where the broker JVM's class archive for this Java and these jars lives
    (``kappa.broker_archive`` builds it)."""
    identity = "\n".join([os.path.realpath(java), *(str(j) for j in jars)])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return settings.cache_dir / "jvm" / f"kafka-broker-{digest}.jsa"


def archive_options(settings: Settings, java: str, jars: list[Path]) -> list[str]:
    """JVM options that map the class archive; none when it was not built, or is being built."""
    path = archive_path(settings, java, jars)
    if "ArchiveClassesAtExit" in settings.broker.java_options or not path.is_file():
        return []
    return [f"-XX:SharedArchiveFile={path}", *QUIET_CDS]


def new_cluster_id() -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64 without padding (22 characters).

    Never one starting with "-" (one in 64 would): ``kafka-storage format --cluster-id`` would
    take it for an option and refuse to format, as Kafka's own id generator avoids too.
    """
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


def min_heap(heap: str) -> str:
    """The initial heap: a quarter of the maximum, at least 64m, in megabytes."""
    units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
    megabytes = float(heap[:-1]) * units[heap[-1].lower()]
    return f"{max(64, int(megabytes / 4))}m"
