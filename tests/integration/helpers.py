"""Running pipelines in tests and reading their tables back as plain dicts."""

from __future__ import annotations

from typing import Any

from kappa.testing.reference import table_state
from streaming.define.registry import get_pipeline
from streaming.delta.table_reader import read_arrow
from streaming.run.deployment import Deployment
from streaming.run.options import RunOptions
from streaming.run.reporting import Snapshot
from streaming.run.runner import PipelineRunner
from streaming.settings import Settings


def run_until_caught_up(spark: Any, settings: Settings, name: str, **options: Any) -> Snapshot:
    pipeline = get_pipeline(settings.pipelines, name)
    deployment = Deployment(pipeline.name, options.pop("version", pipeline.version), settings.home)
    runner = PipelineRunner(
        spark,
        pipeline,
        deployment,
        settings,
        RunOptions(mode="until_caught_up", report_every_s=3600, **options),
    )
    return runner.run()


def table_rows(settings: Settings, name: str, version: str = "v1") -> dict[str, dict[str, Any]]:
    pipeline = get_pipeline(settings.pipelines, name)
    path = Deployment(name, version, settings.home).table_path
    return table_state(read_arrow(path).to_pylist(), pipeline.table.key)
