"""The state of the runs a sensor launched already, so it never stacks a second one."""

from __future__ import annotations

from collections.abc import Mapping

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from streaming.versions.decisions import RunState

_ACTIVE = {
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
}


def run_state(instance: DagsterInstance, job_name: str, tags: Mapping[str, str]) -> RunState:
    """The state of the latest run of ``job_name`` carrying ``tags`` ("none" if there is none)."""
    runs = instance.get_runs(filters=RunsFilter(job_name=job_name, tags=dict(tags)), limit=1)
    if not runs:
        return "none"
    if runs[0].status in _ACTIVE:
        return "active"
    return "succeeded" if runs[0].status == DagsterRunStatus.SUCCESS else "failed"
