"""The platform survives being stopped: Ctrl-C, then kill -9 of everything.

Through the README's run path (`kappa up`, then `kappa deploy`): a continuous deployment
consumes while a producer writes; the platform is stopped with Ctrl-C and started again, then
every one of its processes (Dagster, the deployment's Spark JVM, the Kafka broker) is killed
with SIGKILL and it is started again. The deployment must come back by itself each time, no
acknowledged record may be missing from the log, and the table must equal an independent replay
of every record of both runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Producer

from bench.support.producing import customer_changes
from bench.support.reference import customers_state, replay
from bench.support.settings import private_settings
from streaming.delta.table_reader import latest_commit
from streaming.deployment import Deployment
from streaming.processes import wait_gone
from streaming.settings import REPO_ROOT, Settings
from streaming.wait import wait_until
from tests.integration.helpers import kappa, table_rows

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=150)]

Acked = tuple[str, int, int, bytes | None, bytes | None]  # topic, partition, offset, key, value


class AckedProducer(threading.Thread):
    """Customer changes at ~150/s, remembering every record the broker acknowledged."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(
            {
                **settings.kafka.client_config(),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 500,
                "message.timeout.ms": 600_000,  # the broker is down for a while, twice
            }
        )
        self.acked: list[Acked] = []
        self.failed: list[str] = []
        self.stop = threading.Event()

    def _report(self, err: object, msg: object) -> None:
        if err is not None:
            self.failed.append(str(err))
        elif msg.offset() is not None and msg.offset() >= 0:  # type: ignore[attr-defined]
            self.acked.append(
                (msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value())  # type: ignore[attr-defined]
            )

    def run(self) -> None:
        for i, out in enumerate(customer_changes(10**6, seed=15, keys=400)):
            if self.stop.is_set():
                break
            self.producer.produce(out.topic, key=out.key, value=out.value, on_delivery=self._report)
            if i % 15 == 0:
                self.producer.poll(0.1)
        self.producer.flush(300)


class Platform:
    """`kappa up` as the README runs it, in its own session, with its output kept."""

    def __init__(self, settings: Settings, out_dir: Path) -> None:
        self.settings = settings
        self.out_dir = out_dir
        self.runs = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def kappa(self, *args: str) -> subprocess.CompletedProcess[str]:
        return kappa(self.settings, *args, timeout=120)

    @property
    def output(self) -> str:
        return (self.out_dir / f"up{self.runs}.out").read_text(errors="replace")

    def up(self) -> None:
        self.runs += 1
        with open(self.out_dir / f"up{self.runs}.out", "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kappa.cli", "up", "--no-producer"],
                env={**os.environ, **self.settings.to_env()},
                cwd=REPO_ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        assert wait_until(
            lambda: "Dagster UI" in self.output or self.proc.poll() is not None, 180, 0.5
        ), self.output
        assert self.proc.poll() is None, self.output

    def tree(self) -> list[psutil.Process]:
        """kappa up and its descendants, plus the broker (its own session)."""
        assert self.proc is not None
        root = psutil.Process(self.proc.pid)
        procs = [root, *root.children(recursive=True)]
        pid = int(self.settings.home.broker_pid.read_text())
        return [*procs, psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]

    def ctrl_c(self) -> None:
        assert self.proc is not None
        tree = self.tree()
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.wait(timeout=120) == 0, self.output
        assert "platform stopped" in self.output
        alive = wait_gone(tree, 15)
        assert alive == [], alive

    def kill_everything(self) -> None:
        """SIGSTOP the whole tree first, so nothing reacts to its parent's death, then SIGKILL."""
        tree = self.tree()
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for proc in tree:
                with contextlib.suppress(psutil.NoSuchProcess):
                    proc.send_signal(sig)
        alive = wait_gone(tree, 15)
        assert alive == [], alive
        assert self.proc is not None
        self.proc.wait(timeout=10)

    def stop_quietly(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.kappa("broker", "stop")


def test_stop_and_kill_lose_no_acknowledged_record_and_deployments_resume(tmp_path):
    settings = private_settings(tmp_path / "home")
    table = Deployment("customers", "v1", settings.home).table_path
    platform = Platform(settings, tmp_path)
    producer = AckedProducer(settings)
    try:
        platform.up()
        assert "broker running (Apache Kafka" in platform.output
        deployed = platform.kappa("deploy", "customers")
        assert deployed.returncode == 0, deployed.stderr
        producer.start()
        first = _wait_for_new_commit(table, after=None)

        platform.ctrl_c()
        platform.up()
        assert wait_until(lambda: "resumed customers v1" in platform.output, 120, 0.5), (
            platform.output
        )
        second = _wait_for_new_commit(table, after=first)

        platform.kill_everything()
        platform.up()
        assert wait_until(lambda: "resumed customers v1" in platform.output, 120, 0.5), (
            platform.output
        )
        # The killed platform's deployment run, and any other run it left marked active.
        marked = re.search(
            r"marked (\d+) run\(s\) of the previous platform as canceled", platform.output
        )
        assert marked and int(marked.group(1)) >= 1, platform.output
        _wait_for_new_commit(table, after=second)

        producer.stop.set()
        producer.join(timeout=300)
        assert not producer.failed, producer.failed[:3]
        log = replay(settings.kafka.bootstrap_servers, "customers")
        in_log = {(r.topic, r.partition, r.offset): (r.key, r.value) for r in log}
        lost = [a for a in producer.acked if in_log.get(a[:3]) != a[3:]]
        assert len(producer.acked) > 1000

        ends = {r.partition: r.offset + 1 for r in log}
        assert wait_until(lambda: _covers(table, ends), 180, 1.0), "the table never caught up"
        assert table_rows(settings, "customers") == customers_state(log)
        platform.ctrl_c()
        assert lost == [], f"{len(lost)} acknowledged records are not in the log: {lost[:3]}"
    finally:
        producer.stop.set()
        platform.stop_quietly()


def _wait_for_new_commit(table: Path, after: int | None, timeout_s: float = 240) -> int:
    """The table version of a batch committed after ``after`` (the deployment is consuming)."""

    def version() -> int | None:
        commit = latest_commit(table)
        return None if commit is None else commit.table_version

    assert wait_until(
        lambda: (v := version()) is not None and (after is None or v > after), timeout_s, 0.5
    ), f"no new commit after table version {after}"
    found = version()
    assert found is not None
    return found


def _covers(table: Path, ends: dict[int, int]) -> bool:
    commit = latest_commit(table)
    return commit is not None and {
        p: o for p, o in commit.end_offsets.get("customers", {}).items() if o
    } == {p: o for p, o in ends.items() if o}
