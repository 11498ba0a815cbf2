"""The code location: everything ``workspace.yaml`` loads."""

from __future__ import annotations

from dagster import AssetSelection, Definitions, ScheduleDefinition, define_asset_job

from assets.health import health_checks
from assets.quality_checks import quality_check
from assets.resources import KappaSettings
from assets.tables import table_asset, table_key
from assets.topics import topic_asset
from assets.version_jobs import VERSION_JOBS
from streaming.pipelines import PIPELINES

TOPICS = sorted({t for p in PIPELINES.values() for t in p.topics})


def deploy_job_name(pipeline: str) -> str:
    return f"deploy_{pipeline}"


deploy_jobs = [
    define_asset_job(
        deploy_job_name(name),
        selection=AssetSelection.assets(table_key(name)),
        description=f"Run the `{name}` streaming deployment (continuous by default).",
        tags={"kappa/pipeline": name},
    )
    for name in PIPELINES
]

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
    ],
    jobs=[*deploy_jobs, quality_job, *VERSION_JOBS],
    schedules=[
        ScheduleDefinition(
            name="table_quality_every_10_minutes", job=quality_job, cron_schedule="*/10 * * * *"
        )
    ],
    resources={"kappa": KappaSettings()},
)
