"""The code location: everything ``workspace.yaml`` loads.

Pipelines come from the registry (``KAPPA_PIPELINES`` or the demo pipelines); reloading the code
location re-reads them, which is how a new pipeline version reaches the sensors.
"""

from __future__ import annotations

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    Definitions,
    ScheduleDefinition,
    define_asset_job,
)

from assets.checks.comparison import comparison_checks
from assets.checks.health import health_checks
from assets.checks.quality import quality_check
from assets.names import deploy_job_name
from assets.resources import KappaSettings
from assets.tables import table_asset, table_key
from assets.topics import topic_asset
from assets.versions.jobs import RETIRE_SCHEDULE, VERSION_JOBS
from assets.versions.sensors import candidate_sensor, new_version_sensor
from streaming.define.registry import all_topics, registry

PIPELINES = registry()
TOPICS = all_topics()


deploy_jobs = {
    name: define_asset_job(
        deploy_job_name(name),
        selection=AssetSelection.assets(table_key(name)),
        description=f"Run a `{name}` streaming deployment (continuous by default). Give a "
        "version to run another version side by side, or starting offsets/timestamp to "
        "reprocess from there.",
        tags={"kappa/pipeline": name},
    )
    for name in PIPELINES
}

QUALITY_CHECKS = [quality_check(table_key(n), p) for n, p in PIPELINES.items() if p.quality]

quality_job = define_asset_job(
    "table_quality",
    selection=AssetSelection.checks(*QUALITY_CHECKS),
    description="Run every table's Great Expectations suite on its live snapshot.",
)

defs = Definitions(
    assets=[*(topic_asset(t) for t in TOPICS), *(table_asset(p) for p in PIPELINES.values())],
    asset_checks=[
        *(c for name in PIPELINES for c in health_checks(table_key(name))),
        *QUALITY_CHECKS,
        *(comparison_checks(table_key(n), p) for n, p in PIPELINES.items()),
    ],
    jobs=[*deploy_jobs.values(), quality_job, *VERSION_JOBS],
    schedules=[
        ScheduleDefinition(
            name="table_quality_every_10_minutes",
            job=quality_job,
            cron_schedule="*/10 * * * *",
            default_status=DefaultScheduleStatus.STOPPED,
        ),
        RETIRE_SCHEDULE,
    ],
    sensors=[new_version_sensor(deploy_jobs), candidate_sensor],
    resources={"kappa": KappaSettings()},
)
