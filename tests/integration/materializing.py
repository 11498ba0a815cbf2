"""Materializing a table in-process, as the asset page does: on a version partition, with the
platform's settings in the environment (the definitions read them as the code location does)."""

from __future__ import annotations

import os
from typing import Any

from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult, materialize

from assets.definitions import defs
from assets.partitions import versions_partitions_name
from assets.resources import KappaSettings, spark_resource
from streaming.settings import Settings


def materialize_table(
    settings: Settings,
    pipeline: str,
    *,
    version: str = "v1",
    instance: DagsterInstance | None = None,
    mode: str | None = "until_caught_up",
    checks: tuple[str, ...] = (),
    raise_on_error: bool = False,
) -> ExecuteInProcessResult:
    """``tables/<pipeline>`` (and its ``checks``, by name) on ``version``, added as a partition
    first as the UI does; ``mode`` None launches with the default run config."""
    os.environ.update(settings.to_env())
    try:
        definitions = defs()
        key = AssetKey(["tables", pipeline])
        table = next(a for a in definitions.assets if getattr(a, "key", None) == key)
        chosen = [
            c
            for c in definitions.asset_checks
            if any(k.name in checks and k.asset_key == key for k in c.check_keys)
        ]
        instance = instance or DagsterInstance.ephemeral()
        instance.add_dynamic_partitions(versions_partitions_name(pipeline), [version])
        config: dict[str, Any] = {}
        if mode is not None:
            config = {"ops": {f"tables__{pipeline}": {"config": {"mode": mode}}}}
        return materialize(
            [table, *chosen],
            instance=instance,
            partition_key=version,
            resources={
                "kappa": KappaSettings(home=str(settings.home)),
                "spark": spark_resource(settings),
            },
            run_config=config,
            raise_on_error=raise_on_error,
        )
    finally:
        for name in settings.to_env():
            os.environ.pop(name, None)
