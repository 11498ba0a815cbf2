"""UI jobs for versions: compare and promote a candidate, roll back, retire.

``promote_version`` compares the candidate with the live version at equal input offsets (waiting
for it to catch up), reports the comparison as the blocking ``candidate_*`` checks on the
candidate's partition, and switches the live pointer only if every check passed (or ``force``).
The candidate sensor launches it with ``action: compare_only`` for pipelines whose promotion
policy is manual. A refusal (a failed check, a lost race, nothing to roll back to) fails the run
with one line and its evidence (``assets.refusals``).
"""

# No `from __future__ import annotations`: Dagster reads these annotations at definition time.

from functools import partial
from typing import Literal

from dagster import (
    Config,
    DefaultScheduleStatus,
    JobDefinition,
    OpExecutionContext,
    ScheduleDefinition,
    in_process_executor,
    job,
    op,
)
from pydantic import Field

from assets.checks.comparison import comparison_evaluations, refusal_evidence
from assets.refusals import Refused, refusing
from assets.resources import KappaSettings, KappaSpark
from assets.tables import table_key
from assets.versions.metadata import overview_observation
from streaming.dagster_names import BATCH_KIND, KIND_TAG, versions_partitions_name
from streaming.errors import KappaError
from streaming.settings import Settings


class PromoteConfig(Config):
    pipeline: str = Field(description="pipeline name, e.g. customers")
    version: str = Field(description="the candidate version to make live")
    action: Literal["promote", "compare_only"] = Field(
        default="promote",
        description="promote: switch if every blocking check passed; compare_only: report only",
    )
    force: bool = Field(default=False, description="promote even if comparison checks fail")
    wait_s: float | None = Field(
        default=None,
        description="seconds to wait for the candidate to catch up "
        "(default: the versions.compare_wait_s setting)",
    )
    reason: str = Field(default="promoted from the Dagster UI", description="recorded in history")


class RollbackConfig(Config):
    pipeline: str = Field(description="pipeline name, e.g. customers")


class RetireConfig(Config):
    pipeline: str = Field(description="pipeline name, e.g. customers")
    version: str = Field(description="a version that is not live")


@op(
    description="Compare the candidate with the live version at equal input offsets, report the "
    "blocking candidate checks, then switch the live pointer if they all passed."
)
def compare_and_promote(
    context: OpExecutionContext, config: PromoteConfig, kappa: KappaSettings, spark: KappaSpark
) -> None:
    from streaming.versions.promotion import compare_with_live, promote

    settings = kappa.load()
    key = table_key(config.pipeline)
    wait_s = settings.versions.compare_wait_s if config.wait_s is None else config.wait_s
    try:
        with refusing():
            result = compare_with_live(
                settings, config.pipeline, config.version, wait_s, lambda: spark.spark_session
            )
        for evaluation in comparison_evaluations(context.instance, key, settings, result):
            context.log_event(evaluation)
        context.log.info(result.render_text())
        if not result.passed and not config.force:
            msg = f"promotion of {config.pipeline} {config.version} refused: "
            raise Refused(msg + "; ".join(result.failures), refusal_evidence(settings, result))
        if config.action == "compare_only":
            context.log.info(
                f"{config.pipeline} {config.version} passed; waiting for a manual promotion"
            )
            return
        with refusing():
            done = promote(
                settings,
                config.pipeline,
                config.version,
                force=config.force,
                reason=config.reason,
                comparison=result,
                actor=f"dagster run {context.run_id[:8]}",
            )
    finally:
        context.log_event(overview_observation(key, settings, config.pipeline))
    context.log.info(
        f"{config.pipeline}: live {done.switch.from_version} -> {done.switch.to_version}"
    )


@op(description="Switch the live pointer back to the previously live version.")
def rollback_live(
    context: OpExecutionContext, config: RollbackConfig, kappa: KappaSettings
) -> None:
    from streaming.versions.promotion import rollback

    settings = kappa.load()
    with refusing():
        record = rollback(settings, config.pipeline, actor=f"dagster run {context.run_id[:8]}")
    context.log_event(overview_observation(table_key(config.pipeline), settings, config.pipeline))
    context.log.info(f"{config.pipeline}: rolled back {record.from_version} -> {record.to_version}")


def _retire(context: OpExecutionContext, settings: Settings, pipeline: str, version: str) -> None:
    from streaming.versions.retire import stop_and_retire

    removed = stop_and_retire(
        settings, pipeline, version, context.instance.run_coordinator.cancel_run
    )
    context.log.info(f"retired {pipeline} {version}: removed {', '.join(map(str, removed))}")
    # Its state is gone, so is its partition (events stay in the history; the new-version
    # sensor adds the partition again if the name is deployed afresh).
    partitions = versions_partitions_name(pipeline)
    if context.instance.has_dynamic_partition(partitions, version):
        context.instance.delete_dynamic_partition(partitions, version)
    context.log_event(overview_observation(table_key(pipeline), settings, pipeline))


@op(description="Stop a non-live version's deployment and delete its table and checkpoint.")
def retire_one(context: OpExecutionContext, config: RetireConfig, kappa: KappaSettings) -> None:
    with refusing():
        _retire(context, kappa.load(), config.pipeline, config.version)


@op(description="Retire every replaced version older than versions.retention_hours.")
def retire_expired(context: OpExecutionContext, kappa: KappaSettings) -> None:
    import time

    from streaming.define.registry import pipeline_names
    from streaming.versions.retention import expired_versions

    settings = kappa.load()
    now = time.time()
    for pipeline in pipeline_names(settings.pipelines):
        for expired in expired_versions(settings, pipeline, now):
            context.log.info(
                f"{pipeline} {expired.version} was replaced {expired.age_hours(now):.1f} h ago "
                f"(retention {settings.versions.retention_hours} h): retiring"
            )
            try:
                _retire(context, settings, pipeline, expired.version)
            except KappaError as exc:
                context.log.warning(f"could not retire {pipeline} {expired.version}: {exc}")


# Each job is one op: it runs in the run's own process, not in a step subprocess started for it
# (one Python start less per run: Dagster, the definitions, pyspark and GE imported once).
_one_op_job = partial(job, executor_def=in_process_executor, tags={KIND_TAG: BATCH_KIND})


@_one_op_job(
    description="Compare a candidate with the live version and promote it if the checks pass."
)
def promote_version() -> None:
    compare_and_promote()


@_one_op_job(description="Roll a pipeline back to its previously live version.")
def rollback_version() -> None:
    rollback_live()


@_one_op_job(description="Stop and delete a version that is not live.")
def retire_version() -> None:
    retire_one()


@_one_op_job(description="Retire replaced versions whose rollback window has passed.")
def retire_expired_versions() -> None:
    retire_expired()


VERSION_JOBS: list[JobDefinition] = [
    promote_version,
    rollback_version,
    retire_version,
    retire_expired_versions,
]

RETIRE_SCHEDULE = ScheduleDefinition(
    name="retire_expired_versions_hourly",
    job=retire_expired_versions,
    cron_schedule="17 * * * *",
    default_status=DefaultScheduleStatus.RUNNING,
)
