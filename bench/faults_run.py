"""One fault run: the customers pipeline under a steady stream of events, and the faults injected.

:class:`FaultRun` owns the platform home (on a tmpfs it can fill up or make read-only), the
broker, the event stream and the streaming process, and records what each fault did in
:class:`FaultRow`s. ``bench/faults.py`` drives it from the command line, the integration test
``tests/integration/test_faults.py`` with a few faults.
"""

from __future__ import annotations

import logging
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import faults_checks as checks
from bench.faults_env import Disk, Seaweed
from bench.faults_workload import TOPIC, EventStream
from bench.processes import StreamingJob
from kappa.broker import EmbeddedBroker
from kappa.testing.settings import free_port, private_settings
from streaming.delta.table_reader import last_end_offsets
from streaming.kafka.log import CLIENT_LOGGER
from streaming.run.deployment import Deployment

KILL_TARGETS = ("random moment", "Delta commit", "before checkpoint commit", "start-up")


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
        durable: bool,
        max_batch: int = 5000,
        trigger: str = "1 second",
    ) -> None:
        self.work = work
        self.rng = random.Random(seed)
        self.disk = Disk(work / "home")
        self.settings = private_settings(self.disk.path, free_port())
        # The broker keeps its pid and log off the faulty disk: only the platform's data is on it.
        self.broker_settings = private_settings(work / "broker-home", self.settings.broker.port)
        self.seaweed = Seaweed(work / "seaweed", work / "logs" / "seaweed.log") if durable else None
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
        if self.seaweed is not None:
            self.seaweed.start()
            self.broker = EmbeddedBroker(
                self.broker_settings, storage="s3://tansu/", env=self.seaweed.broker_env()
            )
        self.broker.start()
        self.events.start()
        wait_for(lambda: self.events.delivered, 30, "the first delivered event")
        self.stream.start()
        self.wait_resumed(self.log_entries())

    def close(self) -> None:
        self.stream.stop(timeout_s=30)
        self.events.finish(timeout_s=30)
        self.broker.stop()
        if self.seaweed is not None:
            self.seaweed.stop()
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

    # -- faults -----------------------------------------------------------------------------

    def kills(self, count: int, targets: tuple[str, ...] = KILL_TARGETS) -> FaultRow:
        """SIGKILL the process group ``count`` times at seeded moments, restarting after each.

        The moments cycle through ``targets`` (see :data:`KILL_TARGETS`).
        """
        phases: Counter[str] = Counter()
        landed: list[dict[str, Any]] = []
        resumes: list[float] = []
        survivors = 0
        pending: int | None = None  # log entries when the process was last restarted
        for i in range(count):
            target = targets[i % len(targets)]
            if pending is not None and target != "start-up":
                resumes.append(self.wait_resumed(pending))
            before = self.position()
            if not self._arm(target, pending):
                target += " (window missed, killed anyway)"
            survivors += self.stream.kill()
            after = self.position()
            phase = after.phase(before.orphans)
            phases[phase] += 1
            landed.append({"kill": i + 1, "target": target, "phase": phase, **_ids(after)})
            pending = self.log_entries()
            self.stream.start()
        if pending is not None:
            resumes.append(self.wait_resumed(pending))
        verdict = self.verify()
        outcome = "; ".join(f"{n} {phase}" for phase, n in phases.most_common())
        outcome += (
            f"; {survivors} processes survived a kill; {len(resumes)} resume times measured "
            f"(the other restarts were killed again during start-up)"
        )
        row = FaultRow(
            "SIGKILL of the process group (driver, JVM, workers)",
            count,
            outcome,
            verdict.ok and survivors == 0 and phases[checks.IN_DELTA_COMMIT] > 0,
            verdict.lost + verdict.extra,
            verdict.duplicated,
            resumes,
            {"kills": landed, "phases": dict(phases), "verdict": verdict.to_dict()},
        )
        self.rows.append(row)
        return row

    def _arm(self, target: str, restarted_at_entries: int | None) -> bool:
        """Wait until the moment ``target`` names; False if that window never came."""
        if target == "start-up":  # seconds after the restart, before or around its first batch
            time.sleep(self.rng.uniform(0.5, 8.0))  # the fault's moment, not a synchronisation
            return restarted_at_entries is None or self.log_entries() == restarted_at_entries
        if target == "random moment":
            time.sleep(self.rng.uniform(0.0, 4.0))  # the fault's moment, not a synchronisation
            return True
        data, logs = checks.watch_files(self.deployment.table_path)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now_data, now_logs = checks.watch_files(self.deployment.table_path)
            if target == "Delta commit" and now_data > data and now_logs == logs:
                # The window between the data files and the log entry can be a millisecond:
                # freeze the process group, then look again. Still no log entry: the kill lands
                # inside the commit. Otherwise let it go on and wait for the next batch.
                self.stream.freeze()
                if checks.watch_files(self.deployment.table_path)[1] == logs:
                    return True
                self.stream.thaw()
                now_data, now_logs = checks.watch_files(self.deployment.table_path)
            if target == "before checkpoint commit" and now_logs > logs:
                return True
            if now_logs > logs:  # missed this commit's window: wait for the next one
                data, logs = now_data, now_logs
            time.sleep(0.001)
        return False

    def disk_fault(self, kind: str) -> FaultRow:
        """Fill the home's filesystem up, or remount it read-only, while a batch is in flight."""
        wait_for(
            lambda: checks.in_flight(self.deployment), 60, "a micro-batch in flight", poll_s=0.002
        )
        if kind == "full":
            self.disk.fill()
        else:
            self.disk.read_only()
        faulted_at = time.monotonic()
        code = self.stream.wait_exit(120)
        exited_s = time.monotonic() - faulted_at
        error = self.stream.error_line()
        if code is None:
            self.stream.kill()
        if kind == "full":
            self.disk.free()
        else:
            self.disk.read_write()
        entries = self.log_entries()
        self.stream.start()
        resumed = self.wait_resumed(entries)
        verdict = self.verify()
        stopped = code not in (None, 0)
        reason = "is full" if kind == "full" else "read-only filesystem"
        clear = reason in error and "resumes from its checkpoint" in error
        outcome = (
            f"exit code {code} after {exited_s:.1f} s: {error[:300]}"
            if stopped
            else "did not stop within 120 s (killed)"
        )
        row = FaultRow(
            f"disk {'full' if kind == 'full' else 'read-only'} mid-batch ({self.disk.mode})",
            1,
            outcome,
            stopped and clear and verdict.ok,
            verdict.lost + verdict.extra,
            verdict.duplicated,
            [resumed],
            {"exit_code": code, "error": error, "clear": clear, "verdict": verdict.to_dict()},
        )
        self.rows.append(row)
        return row

    def broker_outage(self, seconds: float) -> FaultRow:
        """Stop the (durable) broker for ``seconds`` while producer and pipeline keep running."""
        before = self.events.end_offsets()
        with CountedClientLog() as refused:  # the producer's "connection refused", expected
            self.broker.stop()
            down_at = time.monotonic()
            time.sleep(seconds)  # the outage itself, not a synchronisation
            survived = self.stream.alive()
            error = "" if survived else self.stream.error_line()
            self.broker.start()
            restarted_at = time.monotonic()
            if not self.stream.alive():  # what a supervisor (Dagster's retry) does
                self.stream.start()
            produced = wait_for(
                lambda: self._delivered_beyond(before), 120, "deliveries after the outage"
            )
        wait_for(
            lambda: self._covers(produced), 180, "the table to cover records produced after it"
        )
        resumed = time.monotonic() - restarted_at
        verdict = self.verify()
        if survived:
            outcome = f"query kept running through {seconds:.0f} s down"
        else:
            outcome = f"query stopped ({error[:200]}), restarted after the broker was back"
        outcome += (
            f"; {len(self.events.errors)} delivery errors; the producer's client logged"
            f" {refused.count} connection errors meanwhile"
        )
        row = FaultRow(
            f"broker down {seconds:.0f} s, restarted with its log (durable s3://)",
            1,
            outcome,
            verdict.ok and not self.events.errors,
            verdict.lost + verdict.extra,
            verdict.duplicated,
            [resumed],
            {
                "query_survived": survived,
                "down_s": restarted_at - down_at,
                "verdict": verdict.to_dict(),
            },
        )
        self.rows.append(row)
        return row

    def _delivered_beyond(self, before: dict[int, int]) -> dict[int, int] | None:
        now = self.events.end_offsets()
        grew = any(now.get(p, 0) > o for p, o in before.items())
        return now if grew else None

    def _covers(self, offsets: dict[int, int]) -> bool:
        if not self.stream.alive():
            self._unplanned_stop()
        ends = _table_ends(self.deployment)
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
        wait_for(lambda: self._covers(produced), 180, "the pipeline to catch up", poll_s=0.5)
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


def durable_broker_outage(
    work: Path, seed: int, rate: float, max_batch: int, seconds: float
) -> list[FaultRow]:
    """A run of its own on the durable broker (tansu ``s3://`` on SeaweedFS): down, then back."""
    run = FaultRun(work / "durable", seed, rate, durable=True, max_batch=max_batch)
    try:
        run.start()
        run.broker_outage(seconds)
        final = run.finish()
    except Exception as exc:  # reported as a failed row, with the logs kept
        return [FaultRow("broker outage (durable s3://)", 1, f"aborted: {exc}", False)]
    finally:
        run.close()
    outage = run.rows[0]
    # A query may stop while the broker is down (the source's requests time out); a supervisor
    # restarts it. The pass condition is that it resumes with nothing lost or duplicated.
    outage.passed = outage.passed and final.passed
    outage.details["final"] = asdict(final)
    outage.details["unplanned_stops"] = run.unexpected_exits
    if run.unexpected_exits:
        outage.outcome += f"; unplanned stops: {'; '.join(run.unexpected_exits)[:300]}"
    return [outage]


def memory_broker_data_loss(work: Path, seed: int) -> FaultRow:
    """The in-memory broker restarts under a running query: it must stop with DATA LOSS (exit 3).

    The restarted broker has an empty, recreated topic whose log ends below the checkpoint; a
    query that went on would silently skip records. A second start must refuse as well.
    """
    from kappa.testing.producing import customer_changes, send

    home = work / "memory-home"
    settings = private_settings(home, free_port())
    broker = EmbeddedBroker(settings)
    broker.start()
    deployment = Deployment("customers", "v1", home)
    args = ["customers", "--trigger-interval", "1 second"]
    stream = StreamingJob(settings.to_env(), args, work / "logs" / "memory-broker")
    try:
        send(settings, customer_changes(3000, seed=seed))
        stream.start()
        wait_for(
            lambda: sum(_table_ends(deployment).values()) >= 3000, 180, "the first 3000 records"
        )
        before = checks.txn_version(deployment.table_path, deployment.app_id)
        broker.stop()
        broker.start()  # the memory engine comes back empty
        restarted_at = time.monotonic()
        send(settings, customer_changes(100, seed=seed + 1))
        first = stream.wait_exit(120)
        stopped_s = time.monotonic() - restarted_at
        first_error = stream.error_line()
        if first is None:
            stream.kill()
        stream.start()
        second = stream.wait_exit(120)
        second_error = stream.error_line()
        if second is None:
            stream.kill()
        after = checks.txn_version(deployment.table_path, deployment.app_id)
    finally:
        stream.stop(timeout_s=10)
        broker.stop()
    loud = all("DATA LOSS" in e and "customers-" in e for e in (first_error, second_error))
    return FaultRow(
        "in-memory broker restarted (log lost)",
        1,
        f"exit code {first} after {stopped_s:.1f} s, restart exit code {second}: "
        f"{first_error[:300]}; table batches {before} -> {after}",
        first == 3 and second == 3 and loud and before == after,
        details={
            "exit_codes": [first, second],
            "errors": [first_error, second_error],
            "table_batch_before": before,
            "table_batch_after": after,
        },
    )


def _table_ends(deployment: Deployment) -> dict[int, int]:
    """Per partition, the end offset the table's last commit covers (empty before the first)."""
    return (last_end_offsets(deployment.table_path) or {}).get(TOPIC, {})


def _ids(pos: checks.Position) -> dict[str, Any]:
    data = asdict(pos)
    data["orphans"] = len(pos.orphans)
    return data


class CountedClientLog(logging.Filter):
    """While active, counts the Kafka clients' log lines instead of printing them: during a
    planned broker outage every reconnect attempt logs an error, which is expected noise."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        self.count += 1
        return False

    def __enter__(self) -> CountedClientLog:
        CLIENT_LOGGER.addFilter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        CLIENT_LOGGER.removeFilter(self)
