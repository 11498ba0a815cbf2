"""Launching a streaming deployment from a Dagster step and relaying what it reports.

The streaming job runs as a subprocess in its own process group (``python -m streaming run ...
--pipes``). Its progress reports arrive as Pipes custom messages and become events on the
version's partition while it runs (``assets.relay``). Terminating the run stops the job at a
micro-batch boundary and then makes sure none of its processes (Python driver, Spark JVM, Python
workers) is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
from dagster import (
    AssetExecutionContext,
    AssetObservation,
    Failure,
    MaterializeResult,
    MetadataValue,
    PipesEnvContextInjector,
    PipesTempFileMessageReader,
    open_pipes_session,
)

from assets.checks.health import health_evaluations
from assets.relay import DeploymentRelay
from streaming.deployment import Deployment
from streaming.processes import kill_all
from streaming.run.health import FAILED, STOPPED
from streaming.run.job import EXIT_BUSY, EXIT_DATA_LOSS
from streaming.settings import REPO_ROOT, Settings

STOP_TIMEOUT_S = 25.0


def already_running(deployment: Deployment) -> dict[str, Any] | None:
    return deployment.lock.holder()


def run_deployment(
    context: AssetExecutionContext,
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
    relay = DeploymentRelay(context, deployment, settings)
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
        finally:
            # The run's termination arrives either here, as DagsterExecutionInterruptedError, or
            # (when it lands while Dagster handles a yielded event) as this generator's close:
            # both leave the job running, and both must stop it and record the stop.
            if proc.poll() is None:
                _stop_and_record(context, relay, proc)
        yield from relay.drain(session.get_custom_messages())
        _raise_for_exit(context, proc.returncode, deployment, log_file, relay)
    final = relay.final()
    if final is not None and proc.returncode != EXIT_BUSY:
        yield MaterializeResult(metadata=final)
    else:
        _end_without_materializing(context)


def _stop_and_record(
    context: AssetExecutionContext, relay: DeploymentRelay, proc: subprocess.Popen[bytes]
) -> None:
    deployment = relay.deployment
    context.log.info(f"{deployment.id}: run terminated, stopping at a batch boundary")
    code = stop_process_tree(proc)
    # Exit code 0 after SIGINT is the job's own clean stop at a batch boundary; anything else
    # (-9) means it had to be killed, which the record must not hide.
    context.log.info(f"{deployment.id}: streaming process exited with code {code}")
    _report_state(context, relay, STOPPED, exit_code=code)


def _end_without_materializing(context: AssetExecutionContext) -> None:
    """Let the step end without its (optional) table output.

    A version that does not serve never materializes, so its partition keeps showing its last
    comparison verdict. But a Pipes session makes Dagster require every output of the step, and
    Dagster has no public way to lift that once the session is closed: without this, such a run
    (an until_caught_up candidate, say) fails at its very end.
    """
    step = context.op_execution_context._step_execution_context
    step._requires_typed_event_stream = False


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


def _raise_for_exit(
    context: AssetExecutionContext,
    code: int,
    deployment: Deployment,
    log_file: Path,
    relay: DeploymentRelay,
) -> None:
    if code in (0, EXIT_BUSY):
        return
    tail = _tail(log_file)
    _report_state(context, relay, FAILED)
    if code == EXIT_DATA_LOSS:
        raise Failure(
            description=f"{deployment.id} stopped on DATA LOSS; not retrying. {tail[-1:]}",
            metadata={"log_tail": "\n".join(tail), "exit_code": code},
            allow_retries=False,
        )
    cause = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
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


def _report_state(
    context: AssetExecutionContext,
    relay: DeploymentRelay,
    state: str,
    exit_code: int | None = None,
) -> None:
    """Record that the deployment stopped or failed, and its health checks' verdicts on that,
    outside the run (which is ending)."""
    metadata = {
        **(relay.last_metadata or {}),
        "state": MetadataValue.text(state),
        "deployment": MetadataValue.text(relay.deployment.id),
    }
    if exit_code is not None:
        metadata["exit_code"] = MetadataValue.int(exit_code)
    version = relay.deployment.version
    observation = AssetObservation(asset_key=relay.key, partition=version, metadata=metadata)
    last = relay.last
    lag = last.total_lag if last is not None else 0
    age = round(max(0.0, time.time() - (last.last_batch_at or last.taken_at)), 1) if last else 0.0
    try:
        context.instance.report_runless_asset_event(observation)
        for verdict in health_evaluations(context.instance, relay.key, version, state, lag, age):
            context.instance.report_runless_asset_event(verdict)
    except Exception as exc:  # reporting must never turn a clean stop into a failure
        context.log.warning(f"could not record state {state!r}: {exc!r}")
