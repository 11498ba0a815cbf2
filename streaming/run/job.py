"""Starting a deployment: ``python -m streaming run PIPELINE [options]`` and ``kappa run``.

Start-up resolves the code the deployment runs (its pin), checks the broker and the log (a
stateful pipeline's topics must keep every record), takes the deployment's lock, makes a
pipeline's first deployment live and starts the query. Dagster launches this through Dagster
Pipes (``--pipes``); ``kappa run`` calls it in-process. SIGINT or SIGTERM stops the query at a
micro-batch boundary. The exit codes tell a supervisor what not to retry.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from streaming.define.pipeline import Pipeline
from streaming.define.registry import get_pipeline
from streaming.deployment import Deployment
from streaming.deployment.code_pin import pinned_pipeline
from streaming.deployment.lock import DeploymentBusyError, DeploymentLock
from streaming.errors import DataLossError, KappaError, RunError
from streaming.run.options import RunOptions, add_flags, from_flags
from streaming.run.reporting import LogReporter, Reporter, Snapshot
from streaming.run.runner import PipelineRunner
from streaming.settings import Settings, launching_run_id, load_settings
from streaming.versions.live_pointer import claim_first


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``kappa run`` and ``python -m streaming run``."""
    parser.add_argument("pipeline", help="pipeline name, e.g. customers")
    parser.add_argument("--version", help="deployment version (default: the pipeline's declared)")
    add_flags(parser)


def run_pipeline(
    settings: Settings,
    pipeline_name: str,
    version: str | None,
    options: RunOptions,
    reporter: Reporter,
) -> Snapshot:
    """Run one deployment in this process until caught up or stopped by SIGINT/SIGTERM.

    The signal handlers are installed before anything slow starts, so a stop request during
    start-up (Spark takes seconds) ends the run cleanly instead of interrupting it half-way.
    """
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        declared = get_pipeline(settings.pipelines, pipeline_name)
        pinned = pinned_pipeline(settings.home, declared, version)
        pipeline = pinned.pipeline
        deployment = Deployment(pipeline.name, pipeline.version, settings.home)
        _check_broker(settings, pipeline)
        options = _resolve_versions(settings, pipeline, deployment, options)
        lock = DeploymentLock(deployment.lock_path)
        lock.acquire(deployment.id, run_id=launching_run_id())
        try:
            if pinned.warning:
                reporter.warning(pinned.warning)
            claim_first(settings.home, pipeline.name, deployment.version, "first deployment")
            from streaming.spark.session import build_spark_session

            spark = build_spark_session(settings, app_name=f"kappa-{deployment.id}")
            # PySpark's SparkContext replaces the SIGINT handler with one that cancels every
            # job and raises KeyboardInterrupt mid-batch; take it back so a stop waits for the
            # batch boundary.
            signal.signal(signal.SIGINT, on_signal)
            runner = PipelineRunner(
                spark,
                pipeline,
                deployment,
                settings,
                options,
                reporter,
                stop=stop,
            )
            return runner.run()
        finally:
            lock.release()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _resolve_versions(
    settings: Settings, pipeline: Pipeline, deployment: Deployment, options: RunOptions
) -> RunOptions:
    """Apply --until-live and the replay-from-the-beginning guard."""
    from streaming.delta.table_reader import last_end_offsets
    from streaming.kafka import offsets as off
    from streaming.kafka.history import check_log_has_beginning
    from streaming.versions.live_pointer import live_version

    fresh = not deployment.checkpoint.started
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


def _check_broker(settings: Settings, pipeline: Pipeline) -> None:
    """The broker answers, the pipeline's topics exist, and a stateful pipeline's topics keep
    every record (``streaming.kafka.history``)."""
    from streaming.kafka.history import check_history_kept
    from streaming.kafka.log import KafkaLog, topic_partitions_or_error

    with KafkaLog.of(settings.kafka, timeout_s=5.0) as log:
        topic_partitions_or_error(log, list(pipeline.topics))
    if pipeline.plan is not None:
        check_history_kept(settings.kafka.client_config(), pipeline.name, pipeline.topics)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streaming")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one pipeline")
    add_run_arguments(run)
    run.add_argument("--pipes", action="store_true", help="report to Dagster through Pipes")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        options = from_flags(args)
        if args.pipes:
            from streaming.run.pipes_reporter import pipes_reporter

            with pipes_reporter() as reporter:
                run_pipeline(settings, args.pipeline, args.version, options, reporter)
        else:
            run_pipeline(settings, args.pipeline, args.version, options, LogReporter())
    except KappaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_code(exc)
    return 0


EXIT_USER_ERROR = 2
EXIT_DATA_LOSS = 3
EXIT_BUSY = 4


def exit_code(exc: Exception) -> int:
    """Exit codes a supervisor can act on: data loss and 'already running' are not retried."""
    if isinstance(exc, DataLossError):
        return EXIT_DATA_LOSS
    if isinstance(exc, DeploymentBusyError):
        return EXIT_BUSY
    return EXIT_USER_ERROR
