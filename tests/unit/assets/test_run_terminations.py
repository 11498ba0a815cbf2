"""The process's watcher of its runs' terminations (``assets.run_terminations``), on a real
Dagster instance: one read for every run watched, a callback once per terminated run, and no
thread left once no run is watched."""

from __future__ import annotations

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus

from assets.run_terminations import RunTerminations, run_terminations
from streaming.wait import wait_until


def _started(instance: DagsterInstance, run_id: str) -> DagsterRun:
    run = DagsterRun(job_name="deploy_orders", run_id=run_id, status=DagsterRunStatus.STARTED)
    return instance.add_run(run)


def test_a_terminated_run_is_called_back_once_and_the_others_are_left_running():
    with DagsterInstance.ephemeral() as instance:
        runs = {name: _started(instance, name) for name in ("kept", "canceling", "canceled")}
        calls: list[str] = []
        watcher = RunTerminations(instance, read_every_s=0.05)
        for name in runs:
            watcher.watch(name, lambda n=name: calls.append(n))
        thread = watcher._thread
        assert thread is not None
        instance.report_run_canceling(runs["canceling"])
        instance.report_run_canceled(runs["canceled"])

        assert wait_until(lambda: sorted(calls) == ["canceled", "canceling"], 10, interval_s=0.05)
        assert watcher.terminated("canceling") and watcher.terminated("canceled")
        assert not watcher.terminated("kept")
        watcher.read()  # a run seen terminated is not read, nor called back, again
        assert sorted(calls) == ["canceled", "canceling"]

        for name in runs:
            watcher.forget(name)
        assert wait_until(lambda: watcher.idle, 10, interval_s=0.05)
        thread.join(5)
        assert not thread.is_alive()


def test_a_failing_callback_still_marks_the_run_terminated():
    with DagsterInstance.ephemeral() as instance:
        run = _started(instance, "r")
        watcher = run_terminations(instance)
        assert run_terminations(instance) is watcher  # one watcher per instance

        def fails() -> None:
            raise RuntimeError("the engine is away")

        watcher.watch("r", fails)
        instance.report_run_canceling(run)
        watcher.read()
        assert watcher.terminated("r")
        watcher.forget("r")
