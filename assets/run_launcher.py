"""The platform's run launcher: a deployment's query starts in the engine as its run launches.

A run's step starts only once the run's process has loaded the code location, half a minute on
a busy machine. :class:`KappaRunLauncher` is Dagster's default launcher that, for a streaming
deployment's run, first asks the engine to start that deployment under the run's id; the step
then takes it over (``assets.engine_link``) and relays everything it reported meanwhile. The
Dagster run stays the deployment's handle: terminating a run whose step has not started yet
stops the deployment here, and a deployment no step takes over stops by itself
(``streaming.engine.hosted``).

A deployment's launch returns at once: the early start and then the run's worker, which only
relays the deployment's reports, follow in the background, so a burst of launches (the whole
demo at once, or the next ``kappa up`` resuming it) waits neither for the engine's answers nor
for a dozen interpreters to load the code location. The worker is a thread of the run host
(``assets.run_host``, ``dagster.run_host``), or else a process of its own, as Dagster's default
launcher starts; one that fails to start fails its run, as a failed launch does.

A hosted run's health is the host's answer (Dagster's run monitoring asks every few seconds): a
host that died, or that no longer executes the run, has it resumed in a new host, where its
step takes the deployment over again. A run in a process of its own is not checked, as with
Dagster's default launcher.

The early start is an optimisation only: when there is no engine, or it refuses, the launch goes
on as without it and the step starts the deployment (with the error a user should see).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, DefaultRunLauncher
from dagster._core.events import EngineEventData
from dagster._core.launcher.base import (
    CheckRunHealthResult,
    LaunchRunContext,
    ResumeRunContext,
    WorkerStatus,
)
from dagster._utils.error import serializable_error_info_from_exc_info
from pydantic import ValidationError

from assets.launcher import in_own_application
from assets.resources import KappaSettings
from assets.run_host.client import (
    HostAddress,
    RunHostClient,
    RunHostUnavailableError,
    ensure_host,
)
from streaming.dagster_names import (
    DEPLOYMENT_KIND,
    KIND_TAG,
    PARTITION_TAG,
    PIPELINE_TAG,
    RUN_HOST_TAG,
    TABLES,
)
from streaming.deployment import deployment_id
from streaming.engine.address import read_address
from streaming.engine.client import EngineClient
from streaming.errors import KappaError
from streaming.home import Home
from streaming.processes import pid_alive
from streaming.run.options import LaunchOptions
from streaming.settings import Settings

log = logging.getLogger(__name__)

# Dagster's own limit for a run's process to start (run_monitoring.start_timeout_seconds in
# platform/dagster.yaml): a run whose step has not come by then is failed, and retried, by Dagster.
# A step that comes later finds the deployment stopped and starts it again from its checkpoint; a
# run marked canceled before its step ran leaves the deployment running this long at most.
CLAIM_WITHIN_S = 180.0
# An engine that does not answer this fast is left to the step.
ENGINE_CALL_S = 5.0
# Run processes loading the code location at once, per launching process (Dagster's queue
# launched 4 at a time): the whole demo's 18 at once took the CPU from the engine's first batches
# and from the launches still to come, whose queries do not wait for these processes.
_PROCESS_STARTS = threading.BoundedSemaphore(4)
_HOMES_KEPT = 1000
# Dagster's run monitoring checks every run in progress in one pass (every 2 s): the run host's
# list of its runs, asked for once, answers the pass's checks of all of its runs.
HOST_RUNS_FRESH_S = 1.0


@dataclass(frozen=True)
class RunDeployment:
    """The deployment a run launches, read from the run as the step will see it."""

    pipeline: str
    version: str
    options: dict[str, Any]
    settings: Settings

    @property
    def id(self) -> str:
        return deployment_id(self.pipeline, self.version)

    def engine(self) -> EngineClient:
        """A client of the engine that gives up fast: the step is the fallback."""
        return EngineClient(self.settings.home, timeout_s=ENGINE_CALL_S)

    @classmethod
    def of(cls, run: DagsterRun) -> RunDeployment | None:
        """The engine deployment ``run`` runs, or None (not a deployment's run, or one whose
        config the step will refuse)."""
        version, pipeline = run.tags.get(PARTITION_TAG), deployed_pipeline(run)
        ops = (run.run_config or {}).get("ops") or {}
        if version is None or pipeline is None or len(ops) > 1:
            return None
        config = next(iter(ops.values()), {}).get("config") or {}
        resource = ((run.run_config or {}).get("resources") or {}).get("kappa") or {}
        try:
            options = LaunchOptions.model_validate(config).model_dump()
            settings = KappaSettings(**(resource.get("config") or {})).load()
        except (ValidationError, KappaError, TypeError):
            return None
        if in_own_application(settings, pipeline):
            return None
        return cls(pipeline, version, options, settings)


def deployed_pipeline(run: DagsterRun) -> str | None:
    """The pipeline a streaming deployment's run deploys, or None for any other run: a deploy
    job's pipeline (its tags), or that of an asset-page run of one table."""
    if run.tags.get(KIND_TAG) == DEPLOYMENT_KIND:
        return run.tags.get(PIPELINE_TAG)
    selected = run.asset_selection or set()
    if len(selected) != 1:
        return None
    (key,) = selected
    return key.path[1] if len(key.path) == 2 and key.path[0] == TABLES else None


class KappaRunLauncher(DefaultRunLauncher):
    """Dagster's default run launcher that launches a deployment's run in the background: its
    query in the engine first, then the run's worker."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._homes: dict[str, Home | None] = {}
        self._host_runs: dict[Home, tuple[float, int, frozenset[str]]] = {}  # (asked at, pid, runs)

    def launch_run(self, context: LaunchRunContext) -> None:
        if deployed_pipeline(context.dagster_run) is None:  # a batch run: launched as Dagster does
            super().launch_run(context)
            return
        threading.Thread(
            target=self._launch_deployment,
            args=(context,),
            name=f"kappa-launch-{context.dagster_run.run_id}",
            daemon=True,
        ).start()

    def _launch_deployment(self, context: LaunchRunContext) -> None:
        """Start the deployment in the engine, then the run's worker: a thread of the run host,
        or a process of its own; a failure to start the process fails the run, as
        ``DagsterInstance.launch_run`` does with a launch that raises."""
        run = context.dagster_run
        deployment = _launched(run)
        start_early(self._instance, run, deployment)
        if deployment is not None and deployment.settings.dagster.run_host:
            if not self._still_starting(run, deployment):
                return
            if self._start_in_host(run, deployment):
                return
        with _PROCESS_STARTS:
            if not self._still_starting(run, deployment):
                return
            try:
                super().launch_run(context)
            except Exception:
                error = serializable_error_info_from_exc_info(sys.exc_info())
                self._instance.report_engine_event(
                    error.message, run, EngineEventData.engine_error(error)
                )
                self._instance.report_run_failed(run)
                stop_untaken(deployment, run.run_id)

    def _still_starting(self, run: DagsterRun, deployment: RunDeployment | None) -> bool:
        """Whether ``run`` still waits for its worker. Terminated while its deployment started,
        or while it waited for its turn: no worker of the run will end it, so it ends here."""
        now = self._instance.get_run_by_id(run.run_id)
        if now is not None and now.status == DagsterRunStatus.STARTING:
            return True
        stop_untaken(deployment, run.run_id)
        if now is not None and not now.is_finished:
            self._instance.report_run_canceled(now)
        return False

    def _start_in_host(
        self, run: DagsterRun, deployment: RunDeployment, resume: bool = False
    ) -> bool:
        """Hand ``run`` to the run host; False (said on the run) if no host could take it."""
        try:
            client = ensure_host(deployment.settings.home)
            client.start(run.run_id, resume=resume)
            pid = client.address().pid
        except RunHostUnavailableError as exc:
            self._instance.report_engine_event(
                f"{exc}; the run gets a process of its own", run, cls=KappaRunLauncher
            )
            return False
        self._instance.add_run_tags(run.run_id, {RUN_HOST_TAG: str(pid)})
        return True

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        home = self._host_home(run)
        if home is None:  # a process of its own: not checked, as by the default launcher
            return CheckRunHealthResult(WorkerStatus.RUNNING, "a process of its own, not checked")
        try:
            pid, runs = self._runs_in_host(home)
            if run.run_id not in runs:  # perhaps started since: only a fresh answer fails it
                pid, runs = self._runs_in_host(home, fresh=True)
        except RunHostUnavailableError as exc:
            address = read_address(home.run_host_address, HostAddress)
            if address is not None and pid_alive(address.pid):  # busy, not gone
                return CheckRunHealthResult(WorkerStatus.RUNNING, f"not answering: {exc}")
            return CheckRunHealthResult(WorkerStatus.FAILED, f"no run host: {exc}")
        if run.run_id in runs:
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        return CheckRunHealthResult(WorkerStatus.FAILED, f"the run host (pid {pid}) lost it")

    def _runs_in_host(self, home: Home, fresh: bool = False) -> tuple[int, frozenset[str]]:
        """The run host's pid and runs, as it answered at most ``HOST_RUNS_FRESH_S`` ago (or
        now, ``fresh``)."""
        asked = self._host_runs.get(home)
        if not fresh and asked is not None and time.monotonic() - asked[0] < HOST_RUNS_FRESH_S:
            return asked[1], asked[2]
        pid, listed = RunHostClient(home, timeout_s=ENGINE_CALL_S).runs()
        runs = frozenset(listed)
        self._host_runs[home] = (time.monotonic(), pid, runs)
        return pid, runs

    def _host_home(self, run: DagsterRun) -> Home | None:
        """The platform home of a hosted run's host, None for a run in a process of its own.
        Remembered per run: the monitoring asks every few seconds, and a run's config is
        fixed."""
        if RUN_HOST_TAG not in run.tags:
            return None
        if run.run_id not in self._homes:
            if len(self._homes) > _HOMES_KEPT:  # runs long finished: forget them
                self._homes.clear()
            deployment = _launched(run)
            self._homes[run.run_id] = None if deployment is None else deployment.settings.home
        return self._homes[run.run_id]

    @property
    def supports_resume_run(self) -> bool:
        return True

    def resume_run(self, context: ResumeRunContext) -> None:
        """Execute a hosted run whose host died again, in a new host (only hosted runs are found
        unhealthy)."""
        run = context.dagster_run
        deployment = _launched(run)
        if deployment is None or not self._start_in_host(run, deployment, resume=True):
            msg = f"run {run.run_id}: no run host to resume it in"
            raise RunHostUnavailableError(msg)

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id) if self.has_instance else None
        if run is not None and RUN_HOST_TAG in run.tags and not run.is_finished:
            # Its process's watcher of terminations stops the deployment at a batch boundary
            # (assets.run_terminations).
            self._instance.report_run_canceling(run)
            return True
        try:
            return super().terminate(run_id)
        finally:
            stop_untaken(None if run is None else _launched(run), run_id)


def _launched(run: DagsterRun) -> RunDeployment | None:
    try:
        return RunDeployment.of(run)
    except Exception:  # the early start never fails a launch: the step reports the cause
        log.warning("run %s: its deployment is left to its step", run.run_id, exc_info=True)
        return None


def start_early(
    instance: DagsterInstance, run: DagsterRun, deployment: RunDeployment | None
) -> None:
    """Start ``deployment``, which ``run`` launches (None: none to start early), in the engine,
    for the run's step to take over."""
    if deployment is None:
        return
    try:
        deployment.engine().submit(
            deployment.pipeline,
            deployment.version,
            deployment.options,
            run.run_id,
            claim_within_s=CLAIM_WITHIN_S,
        )
    except KappaError as exc:  # no engine, or refused: the step starts it and says why
        log.info("%s: not started ahead of run %s: %s", deployment.id, run.run_id, exc)
        return
    instance.report_engine_event(
        f"{deployment.id}: started in the engine as the run launched; its step takes it over",
        dagster_run=run,
        cls=KappaRunLauncher,
    )


def stop_untaken(deployment: RunDeployment | None, run_id: str, claimed: bool = False) -> None:
    """Stop the deployment this run's launch started if no step of the run has taken it over
    (a step stops its own when its run is terminated); None: the run started none. With
    ``claimed``, stop it even if a step took it over: for a run terminated while a new worker
    of it was on its way (a resumed run), whose step will not come."""
    if deployment is None:
        return
    client = deployment.engine()
    try:
        view = client.deployment(deployment.id)
        if view.get("run_id") == run_id and (claimed or not view.get("claimed", True)):
            client.stop(deployment.id)
    except KappaError as exc:
        log.info("%s: not stopped with run %s: %s", deployment.id, run_id, exc)
