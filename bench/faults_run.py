"""One fault run: the customers pipeline under a steady stream of events, observed from outside.

:class:`FaultRun` owns the platform home (on a tmpfs it can fill up or make read-only), the
broker, the event stream and the streaming process, and records what each fault did in
:class:`FaultRow`s. The faults themselves are in ``bench.faults_process`` (kills, disk) and
``bench.faults_broker`` (broker outage, data loss). ``bench/faults.py`` drives a run from the
command line, the integration test ``tests/integration/test_faults.py`` with a few faults.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import faults_checks as checks
from bench.faults_env import Disk
from bench.faults_workload import TOPIC, EventStream
from bench.processes import StreamingJob
from bench.support.settings import free_port, private_settings
from kappa.broker import EmbeddedBroker
from streaming.delta.table_reader import last_end_offsets
from streaming.deployment import Deployment


@dataclass
class FaultRow:
    fault: str
    count: int
    outcome: str
    passed: bool
    lost: int | None = None
    duplicated: int | None = None
    resume_s: list[float] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def resume_text(self) -> str:
        if not self.resume_s:
            return "-"
        if len(self.resume_s) == 1:
            return f"{self.resume_s[0]:.1f} s"
        return f"median {statistics.median(self.resume_s):.1f} s, max {max(self.resume_s):.1f} s"


class FaultError(RuntimeError):
    """The harness could not get the platform into the state a fault needs."""


def wait_for(predicate: Callable[[], object], timeout_s: float, what: str, poll_s: float = 0.1):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            msg = f"timed out after {timeout_s:.0f} s waiting for {what}"
            raise FaultError(msg)
        time.sleep(poll_s)


class FaultRun:
    def __init__(
        self,
        work: Path,
        seed: int,
        rate: float,
        max_batch: int = 5000,
        trigger: str = "1 second",
    ) -> None:
        self.work = work
        self.rng = random.Random(seed)
        self.disk = Disk(work / "home")
        self.settings = private_settings(self.disk.path, free_port())
        # The broker keeps its pid and log off the faulty disk: only the platform's data is on it.
        self.broker_settings = private_settings(
            work / "broker-home",
            self.settings.broker.port,
            controller_port=self.settings.broker.controller_port,
        )
        self.broker = EmbeddedBroker(self.broker_settings)
        self.deployment = Deployment("customers", "v1", self.disk.path)
        self.events = EventStream(self.settings, rate, seed)
        args = ["customers", "--trigger-interval", trigger, "--max-offsets-per-trigger"]
        args.append(str(max_batch))
        self.stream = StreamingJob(self.settings.to_env(), args, work / "logs")
        self.rows: list[FaultRow] = []
        self.unexpected_exits: list[str] = []

    # -- set-up and tear-down ---------------------------------------------------------------

    def start(self) -> None:
        self.disk.mount()
        self.broker.start()
        self.events.start()
        wait_for(lambda: self.events.delivered, 30, "the first delivered event")
        self.stream.start()
        self.wait_resumed(self.log_entries())

    def close(self) -> None:
        self.stream.stop(timeout_s=30)
        self.events.finish(timeout_s=30)
        self.broker.stop()
        if self.disk.mode != "none":
            self.disk.read_write()
            self.disk.free()
        self.disk.unmount()

    # -- observing the deployment -----------------------------------------------------------

    def log_entries(self) -> int:
        return checks.watch_files(self.deployment.table_path)[1]

    def position(self) -> checks.Position:
        return checks.Position.read(self.deployment)

    def wait_resumed(self, entries_before: int, timeout_s: float = 180) -> float:
        """Seconds from the current incarnation's start to its first new table commit."""

        def committed() -> bool:
            if not self.stream.alive():
                self._unplanned_stop()
            return self.log_entries() > entries_before

        wait_for(committed, timeout_s, "a new table commit", poll_s=0.05)
        return time.monotonic() - self.stream.started_at

    def _unplanned_stop(self) -> None:
        """The process stopped without a fault asking for it: restart it like a supervisor would
        (Dagster retries), and remember it (the run fails: the pipeline must never stop)."""
        self.unexpected_exits.append(f"exit {self.stream.returncode}: {self.stream.error_line()}")
        if len(self.unexpected_exits) > 3:
            msg = f"the streaming process keeps stopping: {self.unexpected_exits}"
            raise FaultError(msg)
        self.stream.start()

    def verify(self) -> checks.Verdict:
        return checks.verify(
            self.settings.kafka.bootstrap_servers, self.deployment, self.events.poison()
        )

    def delivered_beyond(self, before: dict[int, int]) -> dict[int, int] | None:
        now = self.events.end_offsets()
        grew = any(now.get(p, 0) > o for p, o in before.items())
        return now if grew else None

    def covers(self, offsets: dict[int, int]) -> bool:
        if not self.stream.alive():
            self._unplanned_stop()
        ends = table_ends(self.deployment)
        return all(ends.get(p, 0) >= o for p, o in offsets.items())

    def unplanned_stops_row(self) -> FaultRow:
        return FaultRow(
            "unplanned stops (restarted as a supervisor would)",
            len(self.unexpected_exits),
            "; ".join(self.unexpected_exits)[:600] or "none",
            not self.unexpected_exits,
        )

    def finish(self) -> FaultRow:
        """Stop producing, let the pipeline catch up, stop it gracefully, and check everything."""
        self.events.finish()
        produced = self.events.end_offsets()
        wait_for(lambda: self.covers(produced), 180, "the pipeline to catch up", poll_s=0.5)
        code = self.stream.stop()
        verdict = self.verify()
        kinds = verdict.poison_kinds  # the poison in the log, found by its bytes
        complete = verdict.records == len(self.events.delivered)
        row = FaultRow(
            "poison records (~1%, 11 kinds)",
            sum(kinds.values()),
            f"{verdict.dead_letters} dead letters for {verdict.poison} poison records, "
            f"{verdict.dead_letters_missing} missing, {len(verdict.wrong_reasons)} wrong reasons;"
            f" {len(self.unexpected_exits)} unplanned stops",
            verdict.ok and verdict.poison == sum(kinds.values()) and not self.unexpected_exits,
            verdict.lost + verdict.extra,
            verdict.duplicated + verdict.dead_letters_duplicated,
            details={"kinds": kinds, "verdict": verdict.to_dict()},
        )
        self.rows.append(row)
        final = FaultRow(
            "final table vs reference replay",
            verdict.records,
            f"{verdict.table_rows} rows, {verdict.expected_rows} expected; graceful stop exit "
            f"code {code}; all {len(self.events.delivered)} delivered records covered: {complete}",
            verdict.ok and complete and code == 0 and not self.events.errors,
            verdict.lost + verdict.extra,
            verdict.duplicated,
            details={"verdict": verdict.to_dict(), "delivery_errors": self.events.errors[:5]},
        )
        self.rows.append(final)
        return final


def table_ends(deployment: Deployment) -> dict[int, int]:
    """Per partition, the end offset the table's last commit covers (empty before the first)."""
    return (last_end_offsets(deployment.table_path) or {}).get(TOPIC, {})
