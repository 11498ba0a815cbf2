"""A deployment in a Spark application of its own: a ``python -m streaming run`` subprocess.

For the pipelines listed under ``engine.own_application`` (hard isolation: a JVM, a driver and
Python workers of their own). The job runs in its own process group and reports through Dagster
Pipes; its progress reports arrive as Pipes custom messages and become events on the version's
partition while it runs. Terminating the run stops the job at a micro-batch boundary and then
makes sure none of its processes (Python driver, Spark JVM, Python workers) is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import psutil
from dagster import (
    AssetExecutionContext,
    MaterializeResult,
    PipesEnvContextInjector,
    PipesTempFileMessageReader,
    open_pipes_session,
)

from assets.outcome import (
    already_running,
    end_without_materializing,
    log_tail,
    raise_for_exit,
    report_state,
)
from assets.relay import DeploymentRelay
from streaming.deployment import Deployment
from streaming.processes import ManagedProcess, kill_all
from streaming.run.health import STOPPED
from streaming.run.job import EXIT_BUSY
from streaming.run.options import LaunchOptions, to_flags
from streaming.settings import REPO_ROOT, Settings

STOP_TIMEOUT_S = 25.0


def streaming_command(pipeline: str, version: str, options: LaunchOptions) -> list[str]:
    """``python -m streaming run`` with the launch options as its flags, reporting through Pipes."""
    run = [sys.executable, "-m", "streaming", "run", pipeline, "--pipes", "--version", version]
    return run + to_flags(options)


def run_in_own_process(
    context: AssetExecutionContext,
    deployment: Deployment,
    options: LaunchOptions,
    settings: Settings,
) -> Iterator[Any]:
    command = streaming_command(deployment.pipeline, deployment.version, options)
    yield from run_command(context, deployment, command, settings)


def run_command(
    context: AssetExecutionContext,
    deployment: Deployment,
    command: Sequence[str],
    settings: Settings,
) -> Iterator[Any]:
    """Run the streaming job ``command`` to completion (or termination), yielding events."""
    holder = already_running(deployment)
    if holder is not None:
        context.log.warning(
            f"{deployment.id} is already running (pid {holder.get('pid')}, run "
            f"{holder.get('run_id')}); not starting a second copy. Stop that run first."
        )
        return
    log_file = deployment.log_path
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
        started = ManagedProcess(deployment.id, command, log_file, env, REPO_ROOT).start()
        proc = started.proc
        assert proc is not None
        context.log.info(f"{deployment.id}: streaming process {proc.pid}, log {log_file}")
        seen = 0
        try:
            while proc.poll() is None:
                messages = session.get_custom_messages()
                yield from relay.drain(messages[seen:])
                seen = len(messages)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=1.0)
        finally:
            # The run's termination arrives either here, as DagsterExecutionInterruptedError, or
            # (when it lands while Dagster handles a yielded event) as this generator's close:
            # both leave the job running, and both must stop it and record the stop.
            if proc.poll() is None:
                _stop_and_record(context, relay, proc)
        yield from relay.drain(session.get_custom_messages()[seen:])
        raise_for_exit(context, proc.returncode, relay, log_tail(log_file))
    final = relay.final()
    if final is not None and proc.returncode != EXIT_BUSY:
        yield MaterializeResult(metadata=final)
    else:
        end_without_materializing(context)


def _stop_and_record(
    context: AssetExecutionContext, relay: DeploymentRelay, proc: subprocess.Popen[bytes]
) -> None:
    deployment = relay.deployment
    context.log.info(f"{deployment.id}: run terminated, stopping at a batch boundary")
    code = stop_process_tree(proc)
    # Exit code 0 after SIGINT is the job's own clean stop at a batch boundary; anything else
    # (-9) means it had to be killed, which the record must not hide.
    context.log.info(f"{deployment.id}: streaming process exited with code {code}")
    report_state(context, relay, STOPPED, exit_code=code)


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
