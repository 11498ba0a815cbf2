"""Several deployments in one process: each its own streaming query on one SparkSession, each
until caught up. Tests run pipelines that read one log side by side this way, and SIGKILL them
all at once (``python -m tests.support.run_together NAME... --max-offsets-per-trigger N``), so a
crash test of many pipelines costs two process starts, not two per pipeline.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from typing import Any

from streaming.define import Pipeline
from streaming.define.registry import get_pipeline
from streaming.deployment import Deployment
from streaming.run.options import RunOptions
from streaming.run.reporting import Snapshot
from streaming.run.runner import PipelineRunner
from streaming.settings import Settings, load_settings


def run_together(
    spark: Any,
    settings: Settings,
    pipelines: Sequence[tuple[Pipeline, str]],
    **options: Any,
) -> dict[str, Snapshot]:
    """Run each (pipeline, version) until caught up, concurrently; their final snapshots by
    deployment id. Raises the first failure once every query has ended."""
    run_options = RunOptions(mode="until_caught_up", report_every_s=3600, **options)
    results: dict[str, Snapshot] = {}
    failures: list[BaseException] = []

    def run(pipeline: Pipeline, version: str) -> None:
        deployment = Deployment(pipeline.name, version, settings.home)
        try:
            runner = PipelineRunner(spark, pipeline, deployment, settings, run_options)
            results[deployment.id] = runner.run()
        except BaseException as exc:  # reported after every thread ended
            failures.append(exc)

    threads = [threading.Thread(target=run, args=pair, daemon=True) for pair in pipelines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.run_together")
    parser.add_argument("pipelines", nargs="+", help="pipeline names (their declared versions)")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    args = parser.parse_args(argv)
    settings = load_settings()
    from streaming.spark.session import build_spark_session

    spark = build_spark_session(settings, app_name="kappa-run-together")
    chosen = [get_pipeline(settings.pipelines, name) for name in args.pipelines]
    options = {}
    if args.max_offsets_per_trigger is not None:
        options["max_offsets_per_trigger"] = args.max_offsets_per_trigger
    run_together(spark, settings, [(p, p.version) for p in chosen], **options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
