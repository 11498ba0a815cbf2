"""One Dagster asset per streaming pipeline: materializing it runs the pipeline's deployment.

The pipeline runs as a subprocess (``python -m streaming run ... --pipes``) and reports back
through Dagster Pipes; Dagster never touches the data.
"""

# No `from __future__ import annotations` here: Dagster reads these annotations at definition time.

import sys
from typing import Literal

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    Config,
    MaterializeResult,
    PipesSubprocessClient,
    asset,
)
from pydantic import Field

from assets.resources import KappaSettings
from assets.topics import topic_key
from kappa.settings import REPO_ROOT
from streaming.pipeline import Pipeline


class StreamingRunConfig(Config):
    """Launch options of a streaming deployment (Launchpad)."""

    mode: Literal["until_caught_up", "continuous"] = Field(
        default="until_caught_up",
        description="until_caught_up: process what is in the log now, then finish. "
        "continuous: keep the query running until the run is terminated.",
    )
    trigger_interval: str = Field(default="1 second", description="micro-batch interval")
    max_offsets_per_trigger: int | None = Field(default=None, description="records per batch cap")


def table_key(pipeline: str) -> AssetKey:
    return AssetKey(["tables", pipeline])


def streaming_command(pipeline: Pipeline, config: StreamingRunConfig) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "streaming",
        "run",
        pipeline.name,
        "--pipes",
        "--trigger-interval",
        config.trigger_interval,
    ]
    if config.mode == "until_caught_up":
        cmd.append("--until-caught-up")
    if config.max_offsets_per_trigger:
        cmd += ["--max-offsets-per-trigger", str(config.max_offsets_per_trigger)]
    return cmd


def table_asset(pipeline: Pipeline) -> AssetsDefinition:
    @asset(
        key=table_key(pipeline.name),
        deps=[topic_key(t) for t in pipeline.topics],
        group_name="tables",
        code_version=pipeline.version,
        description=pipeline.description,
        kinds={"spark", "delta"},
        metadata={"pipeline": pipeline.name, "key": pipeline.table.key},
    )
    def _table(
        context: AssetExecutionContext,
        config: StreamingRunConfig,
        kappa: KappaSettings,
        pipes_subprocess_client: PipesSubprocessClient,
    ) -> MaterializeResult:
        settings = kappa.load()
        return pipes_subprocess_client.run(
            context=context,
            command=streaming_command(pipeline, config),
            env=settings.to_env(),
            cwd=str(REPO_ROOT),
        ).get_materialize_result()

    return _table
