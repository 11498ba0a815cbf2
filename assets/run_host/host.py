"""Runs executed as threads of this process, each with Dagster's own run execution.

A thread does what a run's own process does (``dagster api execute_run``): it loads the run's
job from its code origin and executes it, so the run's events, status and step retries are
Dagster's. What a thread cannot have is asked for elsewhere: a termination is not a signal here,
so the step watches its run's status (``assets.engine_link``), and captured stdout would mix
every thread's, so the host's instance captures none (the run's events hold its logs).

Every run loads the code location anew, as a new run process would; the pipelines' own modules
are imported again once any of them changed on disk (:class:`UserCode`), so a run launched after
a code location reload runs the reloaded code. Runs already executing keep theirs.
"""

from __future__ import annotations

import logging
import os
import sys
import sysconfig
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus
from dagster._core.events import EngineEventData
from dagster._grpc.impl import core_execute_run
from dagster._utils.hosted_user_process import recon_job_from_origin

from assets.run_launcher import RunDeployment, stop_untaken
from streaming.define.registry import forget_loaded
from streaming.settings import REPO_ROOT

log = logging.getLogger(__name__)

# The platform's own packages: loaded once, like the libraries. A pipeline module is user code
# wherever it lives, the demo's ``pipelines`` package included.
PLATFORM_PACKAGES = ("assets", "kappa", "quality", "streaming")


class UserCode:
    """The modules imported from outside the platform and its libraries (or, given ``roots``,
    from under those folders), with the state of their files when first seen."""

    def __init__(self, roots: Sequence[Path] = ()) -> None:
        self._seen: dict[str, tuple[int, int]] = {}
        self._roots = tuple(str(Path(r).resolve()) for r in roots)
        library_paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib")}
        self._library = tuple(
            str(Path(p).resolve())
            for p in (*library_paths, sys.prefix, sys.base_prefix, sysconfig.get_paths()["platlib"])
        )
        self._platform = tuple(str((REPO_ROOT / p).resolve()) for p in PLATFORM_PACKAGES)

    def _stamp(self, module: ModuleType) -> tuple[int, int] | None:
        path = getattr(module, "__file__", None)
        if not path:
            return None
        resolved = str(Path(path).resolve())
        if self._roots and not resolved.startswith(self._roots):
            return None
        if resolved.startswith(self._library) or resolved.startswith(self._platform):
            return None
        try:
            stat = os.stat(resolved)
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def _user_modules(self) -> dict[str, tuple[int, int]]:
        stamps = {name: self._stamp(module) for name, module in list(sys.modules.items())}
        return {name: stamp for name, stamp in stamps.items() if stamp is not None}

    def refresh(self) -> list[str]:
        """Forget every user module when one of them changed on disk since it was seen (a
        helper's change reaches the pipeline modules that import it); the changed ones."""
        current = self._user_modules()
        changed = sorted(n for n, s in current.items() if self._seen.get(n, s) != s)
        if changed:
            for name in current:
                sys.modules.pop(name, None)
            forget_loaded()
            self._seen = {}
        return changed

    def note(self) -> None:
        """Remember the user modules imported so far, as they are on disk now."""
        for name, stamp in self._user_modules().items():
            self._seen.setdefault(name, stamp)


class RunHost:
    """Executes Dagster runs of ``instance``, each in a thread of its own."""

    def __init__(self, instance: DagsterInstance) -> None:
        self.instance = instance
        self._lock = threading.Lock()
        self._loading = threading.Lock()
        self._runs: dict[str, threading.Thread] = {}
        self._code = UserCode()

    def start(self, run_id: str, resume: bool = False) -> bool:
        """Execute ``run_id`` (``resume``: again, after its worker died); False if it executes
        here already."""
        with self._lock:
            if run_id in self._runs:
                return False
            thread = threading.Thread(
                target=self._execute, args=(run_id, resume), name=f"run-{run_id}", daemon=True
            )
            self._runs[run_id] = thread
            thread.start()
        return True

    def active(self) -> list[str]:
        """The runs executing here."""
        with self._lock:
            return sorted(self._runs)

    def _execute(self, run_id: str, resume: bool) -> None:
        try:
            self._execute_run(run_id, resume)
        except BaseException:  # reported on the run by Dagster's execution; logged here too
            log.exception("run %s ended with an error", run_id)
        finally:
            with self._lock:
                self._runs.pop(run_id, None)

    def _execute_run(self, run_id: str, resume: bool) -> None:
        run = self._runnable(run_id)
        if run is None or run.job_code_origin is None:
            return
        with self._loading:
            changed = self._code.refresh()
            if changed:
                log.info("user code changed on disk (%s): imported again", ", ".join(changed))
            job = recon_job_from_origin(run.job_code_origin)
            try:
                job.get_definition()
            except Exception:  # core_execute_run loads it again and reports why on the run
                log.info("run %s: its job does not load", run_id)
            self._code.note()
        run = self._runnable(run_id)  # it may have been terminated while it waited its turn
        if run is None:
            return
        self.instance.report_engine_event(
            f"Executing in the run host (pid {os.getpid()}){', resumed' if resume else ''}.",
            run,
            EngineEventData.in_process(os.getpid()),
        )
        for _event in core_execute_run(
            job, run, self.instance, inject_env_vars=False, resume_from_failure=resume
        ):
            pass

    def _runnable(self, run_id: str) -> DagsterRun | None:
        """The run, unless it must not execute: unknown, finished, or terminated before its step
        started (then it ends CANCELED, and its deployment stops: a previous worker of a resumed
        run may have taken it over)."""
        run = self.instance.get_run_by_id(run_id)
        if run is None or run.is_finished or run.job_code_origin is None:
            log.warning("run %s: not executed (unknown, finished or without code origin)", run_id)
            return None
        if run.status != DagsterRunStatus.CANCELING:
            return run
        stop_untaken(RunDeployment.of(run), run_id, claimed=True)
        self.instance.report_run_canceled(run, "Terminated before its step started.")
        return None
