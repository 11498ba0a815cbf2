"""A deployment in the engine: the Dagster step starts it there, relays its reports and stops it.

The step asks the engine (``streaming.engine``) to start the deployment under this run's id,
then reads its reports every second and relays them. Terminating the run stops the deployment
at a micro-batch boundary. If the engine dies, the step starts it again (or waits for the one
``kappa up`` starts) and starts the deployment again under the same run, so it resumes from its
checkpoint without anyone acting; an engine that stays away fails the step, which is retried.

The step also watches its run's status: a run the run host executes (``assets.run_host``) is a
thread, which no termination signal reaches, so a run marked canceling ends at the next poll as
an interrupted one would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from dagster import (
    AssetExecutionContext,
    DagsterExecutionInterruptedError,
    DagsterRunStatus,
    Failure,
    MaterializeResult,
)

from assets.outcome import end_without_materializing, raise_for_exit, report_state
from assets.relay import DeploymentRelay
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
STOP_WAIT_S = 60.0
# How long a step waits for an engine that died to come back before it fails (and is retried).
ENGINE_BACK_S = 180.0


TERMINATED = (DagsterRunStatus.CANCELING, DagsterRunStatus.CANCELED)


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

    def poll(self) -> None:
        """Read the reports made since the last poll; restart the engine and the deployment if
        the engine died or forgot it."""
        try:
            self._read()
        except (EngineUnavailableError, EngineRefusedError) as exc:
            if isinstance(exc, EngineRefusedError) and exc.status != 404:
                raise
            self._back(exc)

    def _read(self) -> None:
        view = self.client.deployment(self.deployment.id, self.next)
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

    def stop(self) -> None:
        """Stop at a batch boundary; wait for it (the batch in flight finishes first)."""
        try:
            self.client.stop(self.deployment.id)
            deadline = time.monotonic() + STOP_WAIT_S
            while not self.ended and time.monotonic() < deadline:
                time.sleep(0.2)
                self._read()
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
    try:
        while not watch.ended:
            watch.poll()
            yield from relay.drain(watch.take())
            if not watch.ended:
                raise_if_terminated(context)
                time.sleep(POLL_S)
    finally:
        # The run's termination arrives as DagsterExecutionInterruptedError here, or as this
        # generator's close: both must stop the deployment and record the stop.
        if not watch.ended:
            context.log.info(f"{deployment.id}: run terminated, stopping at a batch boundary")
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
