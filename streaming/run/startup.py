"""What every start of a deployment does before its query runs, wherever it runs.

It resolves the code the deployment runs (its pin), checks the broker and the log (a stateful
pipeline's topics must keep every record), applies the version options (``--until-live``, the
replay guard, ``--forward-only``: refused, leaving nothing written, unless the change from the
live version allows it), takes the deployment's lock, copies a forward-only version's table and
state from the live version (``streaming.run.forward_start``) and makes a pipeline's first
deployment live. The same start-up serves a deployment in its own process (``python -m
streaming run``) and one hosted by the engine (``streaming.engine``), which starts many in one
process; the code pin loads pins one at a time there (``streaming.deployment.code_pin``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from streaming.define.pipeline import Pipeline
from streaming.define.registry import get_pipeline
from streaming.deployment import Deployment
from streaming.deployment.code_pin import pinned_pipeline
from streaming.deployment.lock import DeploymentLock
from streaming.deployment.record import PIN_MANIFEST
from streaming.errors import KappaError, RunError
from streaming.run.forward_start import start_forward_only
from streaming.run.options import RunOptions
from streaming.run.reporting import Reporter
from streaming.settings import Settings
from streaming.versions.change import forward_only_refusal
from streaming.versions.live_pointer import claim_first


@dataclass(frozen=True)
class StartedDeployment:
    """A deployment ready to run: the code it runs, its files, and its resolved options."""

    pipeline: Pipeline
    deployment: Deployment
    options: RunOptions


@contextmanager
def started_deployment(
    settings: Settings,
    pipeline_name: str,
    version: str | None,
    options: RunOptions,
    reporter: Reporter,
    run_id: str | None,
) -> Iterator[StartedDeployment]:
    """Start-up of one deployment (see the module docstring); holds its lock while open.

    Raises:
        DeploymentBusyError: another run holds the deployment.
        KappaError: anything a user must fix first (unknown pipeline, broker, log, versions).
    """
    declared = get_pipeline(settings.pipelines, pipeline_name)
    pin = Deployment(declared.name, version or declared.version, settings.home).code_pin_path
    first_start = not (pin / PIN_MANIFEST).exists()
    pinned = pinned_pipeline(settings.home, declared, version)
    if options.forward_only:
        # Checked against the code just pinned (a long-lived process's registry may hold
        # an older module); a refused first start leaves no pin behind.
        try:
            _check_forward_only(settings, declared, pinned.pipeline.version, options)
        except KappaError:
            if first_start:
                shutil.rmtree(pin, ignore_errors=True)
            raise
    pipeline = pinned.pipeline
    deployment = Deployment(pipeline.name, pipeline.version, settings.home)
    _check_broker(settings, pipeline)
    options = _resolve_versions(settings, pipeline, deployment, options)
    lock = DeploymentLock(deployment.lock_path)
    lock.acquire(deployment.id, run_id=run_id)
    try:
        if pinned.warning:
            reporter.warning(pinned.warning)
        if options.forward_only:
            start_forward_only(settings, pipeline, deployment)
        claim_first(settings.home, pipeline.name, deployment.version, "first deployment")
        yield StartedDeployment(pipeline, deployment, options)
    finally:
        lock.release()


def _resolve_versions(
    settings: Settings, pipeline: Pipeline, deployment: Deployment, options: RunOptions
) -> RunOptions:
    """Apply --until-live and the replay-from-the-beginning guard."""
    from streaming.delta.table_reader import last_end_offsets
    from streaming.kafka import offsets as off
    from streaming.kafka.history import check_log_has_beginning
    from streaming.versions.live_pointer import live_version

    fresh = not deployment.checkpoint.started and not options.forward_only
    if fresh and options.starting_timestamp_ms is not None:
        from streaming.kafka.start_position import offsets_at_timestamp

        start = offsets_at_timestamp(settings.kafka, pipeline.topics, options.starting_timestamp_ms)
        options = options.model_copy(update={"starting_offsets": off.dumps(start)})
    elif fresh and options.starting_offsets == "earliest" and not options.force_replay:
        check_log_has_beginning(settings.kafka.client_config(), pipeline.topics)
    if not options.until_live:
        return options
    live = live_version(settings.home, pipeline.name)
    if live is None or live == deployment.version:
        msg = f"--until-live needs another live version of {pipeline.name} (live: {live})"
        raise RunError(msg)
    ending = last_end_offsets(Deployment(pipeline.name, live, settings.home).table_path)
    if ending is None:
        msg = f"the live version {live} of {pipeline.name} has committed nothing yet"
        raise RunError(msg)
    update = {"mode": "until_caught_up", "ending_offsets": off.dumps(ending)}
    return options.model_copy(update=update)


def _check_forward_only(
    settings: Settings, declared: Pipeline, version: str, options: RunOptions
) -> None:
    """A forward-only start is allowed for this version's change from the live one."""
    chosen = [
        name
        for name, given in (
            ("starting_offsets", options.starting_offsets != "earliest"),
            ("starting_timestamp_ms", options.starting_timestamp_ms is not None),
        )
        if given
    ]
    if chosen:
        msg = (
            f"forward_only starts where the live version's table is; leave {' and '.join(chosen)} "
            "out"
        )
        raise RunError(msg)
    refusal = forward_only_refusal(settings, declared, version)
    if refusal:
        raise RunError(refusal)


def _check_broker(settings: Settings, pipeline: Pipeline) -> None:
    """The broker answers, the pipeline's topics exist, and a stateful pipeline's topics keep
    every record (``streaming.kafka.history``)."""
    from streaming.kafka.history import check_history_kept
    from streaming.kafka.log import KafkaLog, topic_partitions_or_error

    with KafkaLog.of(settings.kafka, timeout_s=5.0) as log:
        topic_partitions_or_error(log, list(pipeline.topics))
    if pipeline.plan is not None:
        check_history_kept(settings.kafka.client_config(), pipeline.name, pipeline.topics)
