"""Launching a streaming deployment from a Dagster step and relaying what it reports.

The streaming job runs as a subprocess in its own process group (``python -m streaming run ...
--pipes``). Its progress reports arrive as Pipes custom messages and become asset
materializations (the table changed), observations (health) and check evaluations (lag,
freshness) while it runs. Terminating the run stops the job at a micro-batch boundary and then
makes sure none of its processes (Python driver, Spark JVM, Python workers) is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
from dagster import (
    AssetExecutionContext,
    AssetMaterialization,
    AssetObservation,
    DagsterExecutionInterruptedError,
    Failure,
    MaterializeResult,
    PipesEnvContextInjector,
    PipesTempFileMessageReader,
    open_pipes_session,
)

from assets.checks.health import check_evaluations
from kappa.processes import kill_all
from streaming.define.pipeline import Pipeline
from streaming.run.deployment import Deployment
from streaming.run.health import FAILED, STOPPED
from streaming.run.job import EXIT_BUSY, EXIT_DATA_LOSS
from streaming.run.lock import DeploymentLock
from streaming.run.pipes_reporter import snapshot_metadata
from streaming.run.reporting import Snapshot
from streaming.settings import REPO_ROOT, Settings

STOP_TIMEOUT_S = 25.0


def already_running(deployment: Deployment) -> dict[str, Any] | None:
    return DeploymentLock(deployment.lock_path).holder()


def run_deployment(
    context: AssetExecutionContext,
    pipeline: Pipeline,
    deployment: Deployment,
    command: Sequence[str],
    settings: Settings,
) -> Iterator[Any]:
    """Run the streaming job to completion (or termination), yielding Dagster events."""
    holder = already_running(deployment)
    if holder is not None:
        context.log.warning(
            f"{deployment.id} is already running (pid {holder.get('pid')}, run "
            f"{holder.get('run_id')}); not starting a second copy. Stop that run first."
        )
        return
    log_file = deployment.log_path
    log_file.parent.mkdir(parents=True, exist_ok=True)
    relay = _Relay(context, pipeline)
    with open_pipes_session(
        context=context,
        context_injector=PipesEnvContextInjector(),
        message_reader=PipesTempFileMessageReader(),
    ) as session:
        env = {
            **os.environ,
            **settings.to_env(),
            "KAPPA_RUN_ID": context.run_id,
            **session.get_bootstrap_env_vars(),
        }
        with open(log_file, "ab") as log:
            proc = subprocess.Popen(
                list(command),
                env=env,
                cwd=REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        context.log.info(f"{deployment.id}: streaming process {proc.pid}, log {log_file}")
        try:
            while proc.poll() is None:
                yield from relay.drain(session.get_custom_messages())
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=1.0)
        except DagsterExecutionInterruptedError:
            context.log.info(f"{deployment.id}: run terminated, stopping at a batch boundary")
            code = stop_process_tree(proc)
            # Exit code 0 after SIGINT is the job's own clean stop at a batch boundary; anything
            # else (-9) means it had to be killed, which the record must not hide.
            context.log.info(f"{deployment.id}: streaming process exited with code {code}")
            relay.report_runless(deployment, STOPPED, exit_code=code)
            raise
        finally:
            if proc.poll() is None:
                stop_process_tree(proc)
        yield from relay.drain(session.get_custom_messages())
        _raise_for_exit(proc.returncode, deployment, log_file, relay)
        if proc.returncode == EXIT_BUSY:
            return
        results = session.get_results(implicit_materializations=False)
    final = relay.final_metadata()
    if final is None:
        final = next(
            (dict(r.metadata or {}) for r in results if isinstance(r, MaterializeResult)), {}
        )
    yield MaterializeResult(metadata=final)


def stop_process_tree(proc: subprocess.Popen[bytes], timeout_s: float = STOP_TIMEOUT_S) -> int:
    """SIGINT the job (graceful stop at a batch boundary), then SIGKILL whatever is left.

    Returns:
        The job's exit code: 0 when it stopped by itself, negative when it was killed.
    """
    try:
        tree = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        tree = []
    try:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    kill_all(tree, timeout_s=5.0)
    return proc.returncode


def _raise_for_exit(code: int, deployment: Deployment, log_file: Path, relay: _Relay) -> None:
    if code in (0, EXIT_BUSY):
        return
    tail = _tail(log_file)
    if code == EXIT_DATA_LOSS:
        relay.report_runless(deployment, FAILED)
        raise Failure(
            description=f"{deployment.id} stopped on DATA LOSS; not retrying. {tail[-1:]}",
            metadata={"log_tail": "\n".join(tail), "exit_code": code},
            allow_retries=False,
        )
    cause = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
    relay.report_runless(deployment, FAILED)
    raise Failure(
        description=f"{deployment.id}: streaming process {cause}; it resumes from its "
        "checkpoint on retry",
        metadata={"log_tail": "\n".join(tail), "exit_code": code},
    )


def _tail(path: Path, lines: int = 20) -> list[str]:
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    errors = [line for line in text if line.startswith("error:")]
    return (errors[-1:] if errors else []) + text[-lines:]


class _Relay:
    """Turns the job's progress messages into Dagster events, once each."""

    def __init__(self, context: AssetExecutionContext, pipeline: Pipeline) -> None:
        self.context = context
        self.pipeline = pipeline
        self.asset_key = context.asset_key
        self.seen = 0
        self.table_version: int | None = None
        self.last: dict[str, Any] | None = None
        self.warnings: list[str] = []

    def drain(self, messages: Sequence[Any]) -> Iterator[Any]:
        fresh = messages[self.seen :]
        self.seen = len(messages)
        for message in fresh:
            if isinstance(message, dict) and message.get("kind") == "warning":
                self.warnings.append(str(message.get("message", "")))
            if not isinstance(message, dict) or message.get("kind") not in ("progress", "finished"):
                continue
            payload = {k: v for k, v in message.items() if k != "kind"}
            snapshot = Snapshot(**payload)
            self.last = snapshot_metadata(snapshot)
            if self.warnings:  # e.g. the code changed without a new version: shown with the table
                self.last["warnings"] = "\n".join(self.warnings)
            # A version that is not live reports as observations; the table's health checks and
            # materializations stay those of the live version (until this one is promoted).
            serving = snapshot.role in ("", "live")
            if serving:
                for evaluation in check_evaluations(self.asset_key, snapshot):
                    self.context.log_event(evaluation)
            changed = snapshot.table_version != self.table_version
            if serving and changed and message["kind"] == "progress":
                self.table_version = snapshot.table_version
                yield AssetMaterialization(asset_key=self.asset_key, metadata=self.last)
            else:
                yield AssetObservation(asset_key=self.asset_key, metadata=self.last)

    def final_metadata(self) -> dict[str, Any] | None:
        return self.last

    def report_runless(
        self, deployment: Deployment, state: str, exit_code: int | None = None
    ) -> None:
        metadata = {**(self.last or {}), "state": state, "deployment": deployment.id}
        if exit_code is not None:
            metadata["exit_code"] = exit_code
        try:
            self.context.instance.report_runless_asset_event(
                AssetObservation(asset_key=self.asset_key, metadata=metadata)
            )
        except Exception as exc:  # reporting must never turn a clean stop into a failure
            self.context.log.warning(f"could not record state {state!r}: {exc!r}")
