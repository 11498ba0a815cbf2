"""Faults of the broker, each in a run of its own: the broker down and back (its log kept), and
the log lost under a running query (its topic deleted and created again, empty).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from pathlib import Path

from bench import faults_checks as checks
from bench.faults_run import FaultRow, FaultRun, table_ends, wait_for
from bench.processes import StreamingJob
from bench.support.settings import free_port, private_settings
from kappa.broker import EmbeddedBroker
from streaming.deployment import Deployment
from streaming.kafka.log import CLIENT_LOGGER


def broker_outage(run: FaultRun, seconds: float) -> FaultRow:
    """Stop the broker for ``seconds`` while producer and pipeline keep running."""
    before = run.events.end_offsets()
    with CountedClientLog() as refused:  # the producer's "connection refused", expected
        run.broker.stop()
        down_at = time.monotonic()
        time.sleep(seconds)  # the outage itself, not a synchronisation
        survived = run.stream.alive()
        error = "" if survived else run.stream.error_line()
        run.broker.start()
        restarted_at = time.monotonic()
        if not run.stream.alive():  # what a supervisor (Dagster's retry) does
            run.stream.start()
        produced = wait_for(
            lambda: run.delivered_beyond(before), 120, "deliveries after the outage"
        )
    wait_for(lambda: run.covers(produced), 180, "the table to cover records produced after it")
    resumed = time.monotonic() - restarted_at
    verdict = run.verify()
    if survived:
        outcome = f"query kept running through {seconds:.0f} s down"
    else:
        outcome = f"query stopped ({error[:200]}), restarted after the broker was back"
    outcome += (
        f"; {len(run.events.errors)} delivery errors; the producer's client logged"
        f" {refused.count} connection errors meanwhile"
    )
    row = FaultRow(
        f"broker down {seconds:.0f} s, restarted with its log",
        1,
        outcome,
        verdict.ok and not run.events.errors,
        verdict.lost + verdict.extra,
        verdict.duplicated,
        [resumed],
        {
            "query_survived": survived,
            "down_s": restarted_at - down_at,
            "verdict": verdict.to_dict(),
        },
    )
    run.rows.append(row)
    return row


def broker_outage_run(
    work: Path, seed: int, rate: float, max_batch: int, seconds: float
) -> list[FaultRow]:
    """A run of its own: the broker down, then back with its log."""
    run = FaultRun(work / "outage", seed, rate, max_batch=max_batch)
    try:
        run.start()
        broker_outage(run, seconds)
        final = run.finish()
    except Exception as exc:  # reported as a failed row, with the logs kept
        return [FaultRow("broker outage", 1, f"aborted: {exc}", False)]
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


def lost_log_data_loss(work: Path, seed: int) -> FaultRow:
    """The log is lost under a running query: it must stop with DATA LOSS (exit 3).

    The topic is deleted and created again, empty, so its log ends below the checkpoint; a query
    that went on would silently skip records. A second start must refuse as well.
    """
    from bench.support.broker import delete_topics
    from bench.support.producing import customer_changes, send

    home = work / "lost-log-home"
    settings = private_settings(home, free_port())
    broker = EmbeddedBroker(settings)
    broker.start()
    deployment = Deployment("customers", "v1", home)
    args = ["customers", "--trigger-interval", "1 second"]
    stream = StreamingJob(settings.to_env(), args, work / "logs" / "lost-log")
    try:
        send(settings, customer_changes(3000, seed=seed))
        stream.start()
        wait_for(
            lambda: sum(table_ends(deployment).values()) >= 3000, 180, "the first 3000 records"
        )
        before = checks.txn_version(deployment.table_path, deployment.app_id)
        delete_topics(settings.kafka.client_config(), ["customers"])  # the log is gone
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
        "log lost (topic deleted and created again)",
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
