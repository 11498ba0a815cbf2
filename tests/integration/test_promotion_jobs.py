"""The promote job in a real Dagster instance: a buggy candidate is refused with its reasons and
its blocking candidate checks fail with numbers; a declared change goes through."""

from __future__ import annotations

import dataclasses

import pyarrow.compute as pc
import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance

from assets.definitions import defs
from assets.resources import KappaSettings, spark_resource
from bench.support.producing import customer_changes, send
from quality.rules import ComparisonPolicy
from streaming.define.registry import get_pipeline, registry
from streaming.deployment import Deployment
from streaming.run.options import RunOptions
from streaming.run.runner import PipelineRunner
from streaming.versions.live_pointer import history, live_version, switch

pytestmark = pytest.mark.integration

TABLE = AssetKey(["tables", "customers"])


def _run(spark, settings, pipeline) -> None:  # type: ignore[no-untyped-def]
    PipelineRunner(
        spark,
        pipeline,
        Deployment(pipeline.name, pipeline.version, settings.home),
        settings,
        RunOptions(mode="until_caught_up", report_every_s=3600),
    ).run()


# ~10% of the customers get a broken email
BROKEN_EMAILS = pc.if_else(
    pc.field("customer_id") < "k00030", pc.scalar("broken@example.com"), pc.field("email")
)
UPPER_NAMES = pc.utf8_upper(pc.field("name"))


def _promote(settings, instance, version):  # type: ignore[no-untyped-def]
    return (
        defs()
        .get_job_def("promote_version")
        .execute_in_process(
            run_config={
                "ops": {
                    "compare_and_promote": {
                        "config": {"pipeline": "customers", "version": version, "wait_s": 120}
                    }
                }
            },
            instance=instance,
            resources=_resources(settings),
            raise_on_error=False,
        )
    )


def _check(instance, name):  # type: ignore[no-untyped-def]
    key = AssetCheckKey(TABLE, name)
    [record] = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    return record.event.dagster_event.event_specific_data


def test_buggy_candidate_is_refused_and_declared_change_is_promoted(
    spark, settings, broker, monkeypatch
):
    v1 = get_pipeline(settings.pipelines, "customers")
    send(settings, customer_changes(1500, seed=60))
    _run(spark, settings, v1)
    switch(settings.home, "customers", "v1", "first deployment")

    # v3 breaks the email of ~10% of the customers; it follows v1's commits, so they compare
    assert v1.plan is not None
    v3 = dataclasses.replace(v1, version="v3", plan=v1.plan.with_columns(email=BROKEN_EMAILS))
    monkeypatch.setitem(registry(settings.pipelines), "customers", v3)
    _run(spark, settings, v3)
    instance = DagsterInstance.ephemeral()
    result = _promote(settings, instance, "v3")
    assert not result.success
    failure = result.get_step_failure_events()[0].event_specific_data
    # a refusal is one line with its evidence, not a stack trace
    assert failure.user_failure_data.description.startswith("promotion of customers v3 refused")
    assert "email" in failure.user_failure_data.description
    assert failure.error.stack == [] and "\n" not in failure.error.message
    evidence = failure.user_failure_data.metadata
    assert evidence["failed_checks"].value == "candidate_values"
    assert evidence["match_rate.email"].value < 0.95
    assert live_version(settings.home, "customers") == "v1"
    values = _check(instance, "candidate_values")
    assert not values.passed and values.blocking
    assert values.partition == "v3"  # on the candidate's partition
    rate = values.metadata["match_rate.email"].value
    assert 0.8 < rate < 0.95  # the broken share, measured by GE
    assert values.metadata["unexpected.match(email)"].value > 0
    assert "data_docs" in values.metadata
    assert _check(instance, "candidate_schema").passed
    assert _check(instance, "candidate_keys").passed

    # v4 upper-cases names and declares it: the change is expected, so it is promoted
    v4 = dataclasses.replace(
        v1,
        version="v4",
        plan=v1.plan.with_columns(name=UPPER_NAMES),
        comparison=ComparisonPolicy(expected_changed_columns=frozenset({"name"})),
    )
    monkeypatch.setitem(registry(settings.pipelines), "customers", v4)
    _run(spark, settings, v4)
    result = _promote(settings, instance, "v4")
    assert result.success
    assert live_version(settings.home, "customers") == "v4"
    last = history(settings.home, "customers")[-1]
    assert (last.from_version, last.to_version) == ("v1", "v4")
    assert last.comparison and last.comparison["passed"] and last.comparison["at_offsets"]
    assert _check(instance, "candidate_values").passed


def _resources(settings):  # type: ignore[no-untyped-def]
    return {"kappa": KappaSettings(home=str(settings.home)), "spark": spark_resource(settings)}
