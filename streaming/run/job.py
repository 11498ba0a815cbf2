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

from streaming.deployment.lock import DeploymentBusyError
from streaming.errors import DataLossError, KappaError
from streaming.run.options import RunOptions, add_flags, from_flags
from streaming.run.reporting import LogReporter, Reporter, Snapshot
from streaming.run.runner import PipelineRunner
from streaming.run.startup import started_deployment
from streaming.settings import Settings, launching_run_id, load_settings


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
        run_id = launching_run_id()
        with started_deployment(
            settings, pipeline_name, version, options, reporter, run_id
        ) as started:
            from streaming.spark.session import build_spark_session

            app_name = f"kappa-{started.deployment.id}"
            spark = build_spark_session(settings, app_name=app_name)
            # PySpark's SparkContext replaces the SIGINT handler with one that cancels every
            # job and raises KeyboardInterrupt mid-batch; take it back so a stop waits for the
            # batch boundary.
            signal.signal(signal.SIGINT, on_signal)
            runner = PipelineRunner(
                spark,
                started.pipeline,
                started.deployment,
                settings,
                started.options,
                reporter,
                stop=stop,
            )
            return runner.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
