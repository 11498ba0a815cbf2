"""The hourly `retire_expired_versions` schedule, ticked as the daemon would, retires a replaced
version once its rollback window has passed, and nothing else."""

from __future__ import annotations

import time

from dagster import DagsterInstance, build_schedule_context

from assets.definitions import defs
from streaming.deployment import Deployment
from streaming.versions.live_pointer import history, live_version, switch
from streaming.wait import wait_until
from tests.integration.helpers import commit_customers


def _built(settings, version: str) -> Deployment:  # type: ignore[no-untyped-def]
    """A deployment with a one-commit table and a checkpoint directory."""
    deployment = commit_customers(settings, version, {0: 10})
    (deployment.checkpoint_path / "offsets").mkdir(parents=True)
    return deployment


def _tick(instance: DagsterInstance) -> None:
    """One tick of the schedule, and the run it requests executed to the end."""
    definitions = defs()
    schedule = definitions.get_schedule_def("retire_expired_versions_hourly")
    assert schedule.cron_schedule == "17 * * * *"  # hourly
    assert schedule.default_status.value == "RUNNING"  # on without anyone switching it on
    [request] = schedule.evaluate_tick(build_schedule_context(instance=instance)).run_requests
    job = definitions.get_job_def(schedule.job_name)
    assert job.execute_in_process(instance=instance, run_config=request.run_config).success


def test_the_schedule_retires_an_expired_version_and_keeps_the_rest(settings, monkeypatch):
    for key, value in settings.to_env().items():
        monkeypatch.setenv(key, value)
    v1, v2, v3 = (_built(settings, v) for v in ("v1", "v2", "v3"))
    switch(settings.home, "customers", "v1", "first deployment")
    switch(settings.home, "customers", "v2", "promote")  # v1 replaced now; v3 a candidate
    instance = DagsterInstance.ephemeral()

    _tick(instance)  # within the default 24 h window: nothing goes
    assert all(d.table_path.exists() and d.checkpoint_path.exists() for d in (v1, v2, v3))

    monkeypatch.setenv("KAPPA_RETENTION_HOURS", str(1 / 3600))  # a one-second window
    replaced_at = history(settings.home, "customers")[-1].at
    assert wait_until(lambda: time.time() > replaced_at + 1.5, timeout_s=10, interval_s=0.05)
    _tick(instance)
    assert not v1.table_path.exists() and not v1.checkpoint_path.exists()
    assert v2.table_path.exists() and v3.table_path.exists()  # live, and never live
    assert live_version(settings.home, "customers") == "v2"
