"""The platform's run coordinator: a streaming deployment's run launches at once, batch runs
queue.

Dagster's queue launches the runs it holds in rounds, and a round ends only when every launch in
it has returned; a run submitted meanwhile waits for the next round. Batch runs (comparisons,
promotions, quality suites, retiring) belong in that queue, a few at a time
(``platform/dagster.yaml``). A deployment's run does not: it lasts as long as its query, holds no
slot of the batch limit, and queued behind the quality suites of a platform's start it waited
most of a minute. :class:`KappaRunCoordinator` is Dagster's queued coordinator that launches a
deployment's run when it is submitted (``kappa deploy``, the UI, a sensor or a run retry); the
launch itself returns at once (``assets.run_launcher``).
"""

from __future__ import annotations

from dagster import DagsterRun, DagsterRunStatus, QueuedRunCoordinator
from dagster._core.run_coordinator.base import SubmitRunContext

from assets.run_launcher import deployed_pipeline


class KappaRunCoordinator(QueuedRunCoordinator):
    """Dagster's queued run coordinator that launches streaming deployments' runs directly."""

    def submit_run(self, context: SubmitRunContext) -> DagsterRun:
        run = context.dagster_run
        if run.status != DagsterRunStatus.NOT_STARTED or deployed_pipeline(run) is None:
            return super().submit_run(context)
        self._instance.launch_run(run.run_id, context.workspace)
        launched = self._instance.get_run_by_id(run.run_id)
        if launched is None:  # deleted while it launched
            msg = f"run {run.run_id} disappeared while it launched"
            raise RuntimeError(msg)
        return launched
