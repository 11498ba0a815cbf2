"""The code location: everything ``workspace.yaml`` loads, assembled from the other modules.

Built when Dagster loads the code location (not at import): the pipelines come from the
settings, so reloading the code location is how a new pipeline version reaches the sensors.
"""

from __future__ import annotations

from dagster import Definitions, definitions, in_process_executor

from assets.alerts import REPORT_INPUTS, alerts_per_country_asset
from assets.checks.comparison import comparison_checks
from assets.checks.health import health_checks
from assets.checks.quality import quality_checks, quality_job
from assets.checks.quality_cadence import quality_sensor
from assets.resources import KappaSettings, spark_resource
from assets.tables import deploy_job, table_asset, table_key
from assets.topics import output_topic_asset, topic_asset
from assets.versions.jobs import RETIRE_SCHEDULE, VERSION_JOBS
from assets.versions.sensors import candidate_sensor, new_version_sensor
from streaming.define.registry import all_topics, registry
from streaming.settings import load_settings


@definitions
def defs() -> Definitions:
    settings = load_settings()
    pipelines = registry(settings.pipelines)
    deploy_jobs = {name: deploy_job(name) for name in pipelines}
    suites = quality_checks(pipelines)
    quality_jobs = {name: quality_job(name, check) for name, check in suites.items()}
    published = {t: p for p in pipelines.values() for t in p.output_topics}
    topics = [t for t in all_topics(settings.pipelines) if t not in published]
    reports = [alerts_per_country_asset()] if set(REPORT_INPUTS) <= set(pipelines) else []
    return Definitions(
        assets=[
            *(topic_asset(t, settings.kafka.config_of_topic(t)) for t in topics),
            *(table_asset(p, settings.dagster.retry_delay_s) for p in pipelines.values()),
            *(
                output_topic_asset(t, table_key(p.name), stream=p.stream_output is not None)
                for t, p in published.items()
            ),
            *reports,
        ],
        asset_checks=[
            *(c for name in pipelines for c in health_checks(table_key(name), name)),
            *suites.values(),
            *(comparison_checks(table_key(n), p) for n, p in pipelines.items()),
        ],
        jobs=[*deploy_jobs.values(), *quality_jobs.values(), *VERSION_JOBS],
        schedules=[RETIRE_SCHEDULE],
        sensors=[
            new_version_sensor(deploy_jobs, settings.dagster.sensor_interval_s),
            candidate_sensor(settings.dagster.sensor_interval_s),
            quality_sensor(quality_jobs, settings.dagster.sensor_interval_s),
        ],
        resources={"kappa": KappaSettings(), "spark": spark_resource(settings)},
        # Every job without an executor of its own, the deploy jobs and the asset pages' runs
        # among them: a step is a thin client of the engine or the broker, so a step process of
        # its own would only import the code location again (a deployment's handle is one
        # process; assets.tables turns a terminated step's interrupt into a run that ends
        # CANCELED).
        executor=in_process_executor,
    )
