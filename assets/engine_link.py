"""A deployment in the engine: the Dagster step starts it there, relays its reports and stops it.

The step asks the engine (``streaming.engine``) to start the deployment under this run's id,
then waits on the engine for its reports (the engine answers when there is one, or a change of
state, or after ``REPORT_WAIT_S``) and relays them: an idle deployment's run asks about once
every ``REPORT_WAIT_S``. Terminating the run stops the deployment at a micro-batch boundary.
If the engine dies, the step starts it again (or waits for the one ``kappa up`` starts) and
starts the deployment again under the same run, so it resumes from its checkpoint without anyone
acting; an engine that stays away fails the step, which is retried.

A run the run host executes (``assets.run_host``) is a thread, which no termination signal
reaches: the process's watcher of terminations (``assets.run_terminations``) sees the run marked
canceling, asks the engine to stop the deployment, which ends the step's wait, and the step then
ends as an interrupted one would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from dagster import (
    AssetExecutionContext,
    DagsterExecutionInterruptedError,
    Failure,
    MaterializeResult,
)

from assets.outcome import end_without_materializing, raise_for_exit, report_state
from assets.relay import DeploymentRelay
from assets.run_terminations import TERMINATED, run_terminations
from streaming.deployment import Deployment
from streaming.engine.client import (
    EngineClient,
    EngineRefusedError,
    EngineUnavailableError,
    ensure_engine,
)
from streaming.engine.hosted import ENDED
from streaming.run.health import STOPPED
from streaming.run.job import EXIT_BUSY
from streaming.run.options import LaunchOptions
from streaming.settings import Settings

POLL_S = 1.0
# The longest the step waits on the engine for a report: one arrives every ``report_every_s``
# (15 s by default), a stop or an end of the query answers at once.
REPORT_WAIT_S = 10.0
STOP_WAIT_S = 60.0
# How long a step waits for an engine that died to come back before it fails (and is retried).
ENGINE_BACK_S = 180.0


def raise_if_terminated(context: AssetExecutionContext) -> None:
    """Raise the interrupt a terminated run's process gets, for a run that gets no signal."""
    run = context.instance.get_run_by_id(context.run_id)
    if run is not None and run.status in TERMINATED:
        raise DagsterExecutionInterruptedError(f"run {context.run_id} was terminated")


class _Watch:
    """One deployment in the engine, as this run sees it."""

    def __init__(
        self,
        context: AssetExecutionContext,
        deployment: Deployment,
        options: LaunchOptions,
        settings: Settings,
    ) -> None:
        self.context = context
        self.deployment = deployment
        self.options = options.model_dump()
        self.settings = settings
        self.client: EngineClient = ensure_engine(settings)
        self.next = 0
        self.view: dict[str, Any] = {}
        self.pending: list[dict[str, Any]] = []

    def start(self) -> None:
        """Start the deployment in the engine, or take over the one this run's launch started
        there (``assets.run_launcher``) or that runs for it already."""
        deployment = self.deployment
        self.view = self.client.submit(
            deployment.pipeline, deployment.version, self.options, self.context.run_id
        )
        self.next = 0

    def poll(self, wait_s: float = 0.0) -> None:
        """Read the reports made since the last poll, waiting up to ``wait_s`` for one; restart
        the engine and the deployment if the engine died or forgot it."""
        try:
            self._read(wait_s)
        except (EngineUnavailableError, EngineRefusedError) as exc:
            if isinstance(exc, EngineRefusedError) and exc.status != 404:
                raise
            self._back(exc)

    def _read(self, wait_s: float = 0.0) -> None:
        view = self.client.deployment(self.deployment.id, self.next, wait_s)
        self.view, self.next = view, view["next"]
        self.pending.extend(view["events"])

    def take(self) -> list[dict[str, Any]]:
        """The reports read and not yet relayed."""
        taken, self.pending = self.pending, []
        return taken

    def _back(self, cause: Exception) -> None:
        self.context.log.warning(
            f"{self.deployment.id}: the engine lost the deployment ({cause}); starting it again "
            "from its checkpoint"
        )
        deadline = time.monotonic() + ENGINE_BACK_S
        while True:
            try:
                self.client = ensure_engine(self.settings)
                self.start()
                return
            except EngineUnavailableError:
                if time.monotonic() > deadline:
                    raise
                raise_if_terminated(self.context)
                time.sleep(POLL_S)

    @property
    def ended(self) -> bool:
        return self.view.get("state") in ENDED

    def request_stop(self) -> None:
        """Ask the engine to stop the deployment at a batch boundary, without waiting."""
        try:
            self.client.stop(self.deployment.id)
        except (EngineUnavailableError, EngineRefusedError) as exc:
            self.context.log.warning(f"{self.deployment.id}: could not ask it to stop: {exc}")

    def stop(self) -> None:
        """Stop at a batch boundary; wait for it (the batch in flight finishes first)."""
        try:
            self.client.stop(self.deployment.id)
            deadline = time.monotonic() + STOP_WAIT_S
            while not self.ended and (left := deadline - time.monotonic()) > 0:
                self._read(min(left, REPORT_WAIT_S))
        except (EngineUnavailableError, EngineRefusedError) as exc:
            self.context.log.warning(f"{self.deployment.id}: could not stop it cleanly: {exc}")


def run_in_engine(
    context: AssetExecutionContext,
    deployment: Deployment,
    options: LaunchOptions,
    settings: Settings,
) -> Iterator[Any]:
    """Run the deployment in the engine to its end (or this run's termination)."""
    relay = DeploymentRelay(context, deployment, settings)
    try:
        watch = _Watch(context, deployment, options, settings)
        watch.start()
    except EngineRefusedError as exc:
        if exc.status == 409:
            context.log.warning(f"{exc}; not starting a second copy")
            end_without_materializing(context)
            return
        raise Failure(description=str(exc), allow_retries=False) from None
    except EngineUnavailableError as exc:
        raise Failure(description=str(exc)) from None
    context.log.info(f"{deployment.id}: running in the engine ({watch.client.address().url})")
    terminations = run_terminations(context.instance)
    terminations.watch(context.run_id, watch.request_stop)
    interrupted = True
    try:
        raise_if_terminated(context)  # before the watcher's first read
        while not watch.ended:
            watch.poll(REPORT_WAIT_S)
            yield from relay.drain(watch.take())
            # The watcher's stop may end the deployment before this step sees it running.
            if terminations.terminated(context.run_id):
                raise DagsterExecutionInterruptedError(f"run {context.run_id} was terminated")
        interrupted = False
    finally:
        terminations.forget(context.run_id)
        # The run's termination arrives as DagsterExecutionInterruptedError here, or as this
        # generator's close: both must stop the deployment and record the stop.
        if interrupted:
            context.log.info(f"{deployment.id}: run terminated, stopping at a batch boundary")
            if not watch.ended:
                watch.stop()
            report_state(context, relay, STOPPED, exit_code=watch.view.get("exit_code"))
    yield from relay.drain(watch.take())
    code = int(watch.view.get("exit_code") or 0)
    error = watch.view.get("error") or ""
    raise_for_exit(context, code, relay, [error] if error else [])
    final = relay.final()
    if final is not None and code != EXIT_BUSY:
        yield MaterializeResult(metadata=final)
    else:
        end_without_materializing(context)
