"""The `lag` and `freshness` checks of a running deployment turn red when it falls behind and
stops committing while input waits, and green again once it catches up (real Spark and broker).

The deployment falls behind the way it does in production: a micro-batch is stuck (here in its
operator, waiting on a gate file, as on a slow external lookup) while input keeps arriving. The
test opens and closes the gate, so no state depends on when Spark's trigger clock fires.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance

from assets.checks.health import check_evaluations
from bench.support.producing import customer_changes, send
from streaming.define.registry import get_pipeline
from streaming.deployment import Deployment
from streaming.run.options import RunOptions
from streaming.run.reporting import ENDS_MAX_AGE_S, Snapshot
from streaming.run.runner import PipelineRunner
from streaming.wait import wait_until

pytestmark = pytest.mark.integration


class _Recorder:
    """Collects every progress report the running deployment makes."""

    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []

    def started(self, deployment: Any, options: Any, settings: Any) -> None:
        pass

    def warning(self, message: str) -> None:
        pass

    def progress(self, snapshot: Snapshot) -> None:
        self.snapshots.append(snapshot)

    def finished(self, snapshot: Snapshot) -> None:
        self.snapshots.append(snapshot)


def _verdicts(snapshot: Snapshot) -> dict[str, bool]:
    key = AssetKey(["tables", "customers"])
    with DagsterInstance.ephemeral() as instance:
        return {e.check_name: e.passed for e in check_evaluations(instance, key, snapshot)}


class _Gated:
    """``operator``, whose steps over records each wait, inside the batch, until ``gate``
    exists."""

    def __init__(self, operator: Any, gate: Path) -> None:
        self.operator = operator
        self.gate = gate

    def __getattr__(self, name: str) -> Any:
        if name in ("operator", "gate") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.operator, name)

    def step(self, state: Any, batch: Any) -> Any:
        if any(records.num_rows for records in batch.records.values()):
            deadline = time.monotonic() + 600  # a stuck test ends; the gate opens long before
            while not self.gate.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return self.operator.step(state, batch)


def test_lag_and_freshness_turn_red_then_green(spark, settings, broker, tmp_path):
    gate = tmp_path / "gate-open"
    gate.touch()
    send(settings, customer_changes(100, seed=80))
    customers = get_pipeline(settings.pipelines, "customers")
    assert customers.plan is not None
    plan = dataclasses.replace(customers.plan, operator=_Gated(customers.plan.operator, gate))
    pipeline = dataclasses.replace(customers, plan=plan)
    options = RunOptions(
        mode="continuous",
        report_every_s=0.5,
        lag_threshold=50,
        # reports reuse log ends up to ENDS_MAX_AGE_S old, so waiting input shows that late;
        # stalling (counted from the last commit, before the send) must come after it for the
        # lagging state to be seen first, with room for a loaded machine
        stall_after_s=ENDS_MAX_AGE_S + 10.0,
    )
    recorder, stop = _Recorder(), threading.Event()
    runner = PipelineRunner(
        spark,
        pipeline,
        Deployment("customers", "v1", settings.home),
        settings,
        options,
        recorder,
        stop=stop,
    )
    failures: list[BaseException] = []

    def run() -> None:
        try:
            runner.run()
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        seen = recorder.snapshots

        def started() -> bool:
            return bool(failures) or any(s.batches >= 1 and s.total_lag == 0 for s in list(seen))

        assert wait_until(started, 120)
        assert failures == []
        assert _verdicts(seen[-1]) == {"lag": True, "freshness": True}
        sent_at = len(seen)  # reports from here on were taken after the send began

        def first_after(predicate: Any) -> Snapshot | None:
            return next((s for s in list(seen)[sent_at:] if predicate(s)), None)

        gate.unlink()  # the next batch gets stuck until the test opens the gate again
        send(settings, customer_changes(400, seed=81))
        waiting = lambda s: s.total_lag == 400  # noqa: E731 - every sent record is waiting
        assert wait_until(lambda: first_after(lambda s: waiting(s) and s.state == "lagging"), 30)
        lagging = first_after(lambda s: waiting(s) and s.state == "lagging")
        assert lagging is not None
        assert _verdicts(lagging) == {"lag": False, "freshness": True}
        # stall_after_s after the last commit, plus report cadence on a loaded machine
        assert wait_until(lambda: first_after(lambda s: s.state == "stalled"), 60), seen[-3:]
        stalled = first_after(lambda s: s.state == "stalled")
        assert stalled is not None and stalled.total_lag == 400
        assert _verdicts(stalled)["freshness"] is False
        # unstuck, the batch commits the backlog: both checks are green again
        gate.touch()
        caught_up = lambda s: s.taken_at > stalled.taken_at and s.total_lag == 0  # noqa: E731
        assert wait_until(lambda: failures or first_after(caught_up), 90), seen[-3:]
        recovered = first_after(caught_up)
        assert recovered is not None, failures
        assert _verdicts(recovered) == {"lag": True, "freshness": True}
    finally:
        gate.touch()
        stop.set()
        thread.join(timeout=120)
    assert not thread.is_alive()
    assert failures == []
