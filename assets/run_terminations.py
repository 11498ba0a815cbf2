"""Which of this process's deployment runs were terminated, read for all of them at once.

A deployment's step waits on the engine for its reports (a long poll), so it cannot also read
its run's status every second. One thread per Dagster instance reads the status of every run it
watches in one query a second; when a run is marked canceling it calls the step's callback,
which asks the engine to stop the deployment, and that ends the step's wait at once. The thread
starts with the first run watched and ends with the last one forgotten.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

log = logging.getLogger(__name__)

TERMINATED = (DagsterRunStatus.CANCELING, DagsterRunStatus.CANCELED)
READ_EVERY_S = 1.0


class RunTerminations:
    """The terminations of the runs of one Dagster instance that this process watches."""

    def __init__(self, instance: DagsterInstance, read_every_s: float = READ_EVERY_S) -> None:
        self.instance = instance
        self.read_every_s = read_every_s
        self._callbacks: dict[str, Callable[[], None]] = {}
        self._terminated: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, run_id: str, on_terminated: Callable[[], None]) -> None:
        """Call ``on_terminated`` (once, from the watching thread) when the run is terminated."""
        with self._lock:
            self._callbacks[run_id] = on_terminated
            self._terminated.discard(run_id)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._read_until_empty, name="run-terminations", daemon=True
                )
                self._thread.start()

    def forget(self, run_id: str) -> None:
        with self._lock:
            self._callbacks.pop(run_id, None)
            self._terminated.discard(run_id)

    @property
    def idle(self) -> bool:
        """Watching no run, and no thread left."""
        with self._lock:
            return not self._callbacks and self._thread is None

    def terminated(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._terminated

    def read(self) -> None:
        """Read the statuses of the runs watched and not yet seen terminated; call back."""
        with self._lock:
            pending = [r for r in self._callbacks if r not in self._terminated]
        if not pending:
            return
        filters = RunsFilter(run_ids=pending, statuses=list(TERMINATED))
        ended = {run.run_id for run in self.instance.get_runs(filters=filters)}
        for run_id in ended:
            with self._lock:
                callback = self._callbacks.get(run_id)
                self._terminated.add(run_id)
            if callback is None:
                continue
            try:
                callback()
            except Exception:  # the step still sees the termination and stops it itself
                log.exception("run %s: the termination callback failed", run_id)

    def _read_until_empty(self) -> None:
        while True:
            time.sleep(self.read_every_s)
            with self._lock:
                if not self._callbacks:
                    self._thread = None
                    return
            try:
                self.read()
            except Exception:  # a busy database: read again next time
                log.warning("reading the watched runs' statuses failed", exc_info=True)


_BY_INSTANCE: dict[int, RunTerminations] = {}
_BY_INSTANCE_LOCK = threading.Lock()


def run_terminations(instance: DagsterInstance) -> RunTerminations:
    """The process's watcher for ``instance``'s runs."""
    with _BY_INSTANCE_LOCK:
        for key, idle in list(_BY_INSTANCE.items()):  # an instance gone from use is let go
            if idle.instance is not instance and idle.idle:
                del _BY_INSTANCE[key]
        watcher = _BY_INSTANCE.get(id(instance))
        if watcher is None or watcher.instance is not instance:
            watcher = _BY_INSTANCE[id(instance)] = RunTerminations(instance)
        return watcher
