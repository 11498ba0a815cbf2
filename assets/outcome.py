"""How a deployment's Dagster run ends: the state it records, and the failure a retry reads.

Shared by the two places a deployment runs (``assets.engine_link``, ``assets.own_process``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext, AssetObservation, Failure, MetadataValue

from assets.checks.health import health_evaluations
from assets.relay import DeploymentRelay
from streaming.deployment import Deployment
from streaming.run.health import FAILED
from streaming.run.job import EXIT_BUSY, EXIT_DATA_LOSS


def already_running(deployment: Deployment) -> dict[str, Any] | None:
    return deployment.lock.holder()


def end_without_materializing(context: AssetExecutionContext) -> None:
    """Let the step end without its (optional) table output.

    A version that does not serve never materializes, so its partition keeps showing its last
    comparison verdict. But a Pipes session makes Dagster require every output of the step, and
    Dagster has no public way to lift that once the session is closed: without this, such a run
    (an until_caught_up candidate, say) fails at its very end.
    """
    step = context.op_execution_context._step_execution_context
    step._requires_typed_event_stream = False


def raise_for_exit(
    context: AssetExecutionContext,
    code: int,
    relay: DeploymentRelay,
    cause: list[str],
) -> None:
    """Fail the step as the deployment's end says: data loss is not retried, anything else is
    (it resumes from its checkpoint). ``cause`` is what explains it, last line first."""
    if code in (0, EXIT_BUSY):
        return
    deployment = relay.deployment
    report_state(context, relay, FAILED)
    metadata = {"log_tail": "\n".join(cause), "exit_code": code}
    if code == EXIT_DATA_LOSS:
        raise Failure(
            description=f"{deployment.id} stopped on DATA LOSS; not retrying. {cause[:1]}",
            metadata=metadata,
            allow_retries=False,
        )
    how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
    first = f": {cause[0]}" if cause else ""
    raise Failure(
        description=f"{deployment.id}: the deployment {how}{first}; it resumes from its "
        "checkpoint on retry",
        metadata=metadata,
    )


def log_tail(path: Path, lines: int = 20) -> list[str]:
    """The last lines of a log, its last ``error:`` line first."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    errors = [line for line in text if line.startswith("error:")]
    return (errors[-1:] if errors else []) + text[-lines:]


def report_state(
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
