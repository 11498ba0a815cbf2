"""One deployment hosted by the engine: its thread, its stop, and what it reported.

A hosted deployment runs the same start-up and the same query as a deployment in its own
process (``streaming.run.startup``, ``streaming.run.runner``), in a thread of the engine; its
batches join the engine's scheduler pool for their kind of run (``streaming.engine.pools``).
Its reports are kept in order, numbered, for the client that watches it (a Dagster run) to read
from where it left off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from streaming.deployment import deployment_id
from streaming.engine.pools import deployment_pool
from streaming.errors import KappaError, RunError
from streaming.run.job import exit_code
from streaming.run.options import RunOptions
from streaming.run.reporting import Snapshot
from streaming.run.runner import PipelineRunner
from streaming.run.startup import StartedDeployment, started_deployment
from streaming.settings import Settings

log = logging.getLogger(__name__)

STARTING = "starting"
RUNNING = "running"
STOPPING = "stopping"
STOPPED = "stopped"
CAUGHT_UP = "caught_up"
FAILED = "failed"
ENDED = (STOPPED, CAUGHT_UP, FAILED)
# An unexpected exception, as a crashed process would exit: worth a retry.
EXIT_CRASH = 1
# Spark's words when a query's source process did not connect back within its fixed 10 s.
SLOW_START = "Python worker failed to connect back"
START_ATTEMPTS = 4
START_RETRY_S = 2.0

# Reports kept per deployment: a client that falls further behind reads from the oldest kept.
KEPT_EVENTS = 500


class EventLog:
    """A hosted deployment's reports (a :class:`streaming.run.reporting.Reporter`), numbered
    from 0 in the order they were made; a report is kept as it was made, its number beside it,
    so readers get the same report a deployment in its own process would have written."""

    def __init__(self, kept: int = KEPT_EVENTS) -> None:
        self._events: deque[tuple[int, dict[str, Any]]] = deque(maxlen=kept)  # (number, event)
        self._next = 0
        self._changes = 0  # state changes of the deployment, which wake a waiting reader too
        self._changed = threading.Condition()

    def _add(self, event: dict[str, Any]) -> None:
        with self._changed:
            self._events.append((self._next, event))
            self._next += 1
            self._changed.notify_all()

    def touch(self) -> None:
        """The deployment's state changed: wake the readers waiting for news."""
        with self._changed:
            self._changes += 1
            self._changed.notify_all()

    def since(
        self, index: int, wait_s: float = 0.0, ended: Callable[[], bool] = lambda: False
    ) -> tuple[list[dict[str, Any]], int]:
        """The events numbered ``index`` and later that are still kept, and the next number.
        With ``wait_s``, wait that long at most for one, a change of state, or ``ended``."""
        with self._changed:
            changes = self._changes

            def news() -> bool:
                return self._next > index or self._changes != changes or ended()

            self._changed.wait_for(news, wait_s)
            return [e for n, e in self._events if n >= index], self._next

    def started(self, deployment: Any, options: Any, settings: Settings) -> None:
        self._add({"kind": "started", "deployment": deployment.id, "settings": settings.shown()})

    def warning(self, message: str) -> None:
        self._add({"kind": "warning", "message": message})

    def progress(self, snapshot: Snapshot) -> None:
        self._add({"kind": "progress", **snapshot.to_dict()})

    def finished(self, snapshot: Snapshot) -> None:
        self._add({"kind": "finished", **snapshot.to_dict()})


@dataclass(frozen=True)
class DeploymentRequest:
    """What a client asks the engine to run."""

    pipeline: str
    version: str
    options: RunOptions
    run_id: str | None = None
    # Set when the run launcher starts the deployment before its run's step exists: the step
    # takes it over with a request of its own (same run id); untaken, it stops after this long.
    claim_within_s: float | None = None

    @property
    def id(self) -> str:
        return deployment_id(self.pipeline, self.version)


class HostedDeployment:
    """A deployment running in the engine's thread ``kappa-<id>``."""

    def __init__(self, request: DeploymentRequest, settings: Settings, spark: SparkSession) -> None:
        self.request = request
        self.settings = settings
        self.spark = spark
        self.events = EventLog()
        self._state = STARTING
        self.error = ""
        self.exit_code: int | None = None
        self.started_at = time.time()
        self.ended_at: float | None = None
        self._stop = threading.Event()
        self._claimed = threading.Event()
        if request.claim_within_s is None:
            self._claimed.set()
        self._thread = threading.Thread(target=self._run, name=f"kappa-{request.id}", daemon=True)

    @property
    def id(self) -> str:
        return self.request.id

    @property
    def state(self) -> str:
        return self._state

    @state.setter
    def state(self, state: str) -> None:
        self._state = state
        self.events.touch()

    @property
    def active(self) -> bool:
        return self.state not in ENDED

    @property
    def claimed(self) -> bool:
        return self._claimed.is_set()

    def start(self) -> HostedDeployment:
        self._thread.start()
        if not self.claimed:
            timer = threading.Timer(self.request.claim_within_s or 0.0, self._unclaimed)
            timer.daemon = True
            timer.start()
        return self

    def claim(self) -> None:
        """The run's step has taken over the deployment its launch started."""
        self._claimed.set()

    def _unclaimed(self) -> None:
        if self.claimed or not self.active:
            return
        message = (
            f"{self.id}: started when run {self.request.run_id} was launched, but no step of that "
            f"run took it over within {self.request.claim_within_s:.0f} s; stopping it"
        )
        log.warning(message)
        self.events.warning(message)
        self.stop()

    def stop(self) -> None:
        """Ask the query to stop after the batch in flight (or before it starts)."""
        if self.active:
            self.state = STOPPING  # which wakes the readers waiting for news
        self._stop.set()

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pipeline": self.request.pipeline,
            "version": self.request.version,
            "run_id": self.request.run_id,
            "claimed": self.claimed,
            "state": self.state,
            "error": self.error,
            "exit_code": self.exit_code,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }

    def _run(self) -> None:
        request = self.request
        try:
            with started_deployment(
                self.settings,
                request.pipeline,
                request.version,
                request.options,
                self.events,
                request.run_id,
            ) as started:
                if self._stop.is_set():
                    self._end(STOPPED, 0)
                    return
                if self.state == STARTING:
                    self.state = RUNNING
                # The query's thread inherits the pool of the thread that starts it.
                context = self.spark.sparkContext
                context.setLocalProperty("spark.scheduler.pool", deployment_pool(started.options))
                self._run_query(started)
            self._end(STOPPED if self._stop.is_set() else CAUGHT_UP, 0)
        except KappaError as exc:
            self._end(FAILED, exit_code(exc), str(exc))
        except Exception as exc:
            log.exception("deployment %s failed", self.id)
            self._end(FAILED, EXIT_CRASH, f"{type(exc).__name__}: {exc}")

    def _run_query(self, started: StartedDeployment) -> None:
        """Run the deployment's query; start it again from its checkpoint (exactly once) when it
        failed only because its source's Python process was slow to start: Spark gives that
        process 10 s, which a machine starting a dozen deployments at once can exceed."""
        for attempt in range(1, START_ATTEMPTS + 1):
            runner = PipelineRunner(
                self.spark,
                started.pipeline,
                started.deployment,
                self.settings,
                started.options,
                self.events,
                stop=self._stop,
            )
            try:
                runner.run()
                return
            except RunError as exc:
                if attempt == START_ATTEMPTS or self._stop.is_set() or SLOW_START not in str(exc):
                    raise
                message = (
                    f"{self.id}: {exc}; starting the query again from its checkpoint "
                    f"(attempt {attempt + 1} of {START_ATTEMPTS})"
                )
                log.warning(message)
                self.events.warning(message)
                self._stop.wait(START_RETRY_S * attempt)

    def _end(self, state: str, code: int, error: str = "") -> None:
        self.error = error
        self.exit_code = code
        self.ended_at = time.time()
        self.state = state
