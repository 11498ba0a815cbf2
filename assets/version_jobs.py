"""UI jobs for versions: promote a candidate (gated by the comparison) and roll back."""

# No `from __future__ import annotations`: Dagster reads these annotations at definition time.

from dagster import Config, Failure, JobDefinition, OpExecutionContext, job, op
from pydantic import Field

from assets.resources import KappaSettings
from kappa.errors import KappaError


class PromoteConfig(Config):
    pipeline: str = Field(description="pipeline name, e.g. customers")
    version: str = Field(description="the candidate version to make live")
    force: bool = Field(default=False, description="promote even if comparison checks fail")


class RollbackConfig(Config):
    pipeline: str = Field(description="pipeline name, e.g. customers")


@op(
    description="Compare the candidate with the live version at equal input offsets, then "
    "switch the live pointer if every blocking check passed."
)
def promote_candidate(
    context: OpExecutionContext, config: PromoteConfig, kappa: KappaSettings
) -> None:
    from kappa.promotion import promote

    try:
        done = promote(
            kappa.load(),
            config.pipeline,
            config.version,
            force=config.force,
            reason="promoted from the Dagster UI",
        )
    except KappaError as exc:
        raise Failure(description=str(exc), allow_retries=False) from None
    if done.comparison is not None:
        context.log.info(done.comparison.render_text())
    context.log.info(
        f"{config.pipeline}: live {done.switch.from_version} -> {done.switch.to_version}"
    )


@op(description="Switch the live pointer back to the previously live version.")
def rollback_live(
    context: OpExecutionContext, config: RollbackConfig, kappa: KappaSettings
) -> None:
    from kappa.promotion import rollback

    try:
        record = rollback(kappa.load(), config.pipeline)
    except KappaError as exc:
        raise Failure(description=str(exc), allow_retries=False) from None
    context.log.info(f"{config.pipeline}: rolled back {record.from_version} -> {record.to_version}")


@job(description="Promote a candidate version (launch with pipeline and version).")
def promote_version() -> None:
    promote_candidate()


@job(description="Roll a pipeline back to its previously live version.")
def rollback_version() -> None:
    rollback_live()


VERSION_JOBS: list[JobDefinition] = [promote_version, rollback_version]
