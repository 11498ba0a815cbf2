"""Versions: a code change without a version bump is reported, not silently mixed in."""

from __future__ import annotations

import dataclasses

import pyarrow.compute as pc
import pytest

from assets.resources import KappaSettings, spark_resource
from bench.support.producing import customer_changes, send
from streaming.define.registry import get_pipeline
from streaming.deployment import Deployment
from streaming.run.options import RunOptions
from streaming.run.reporting import NullReporter
from streaming.run.runner import PipelineRunner

pytestmark = pytest.mark.integration


class Recorder(NullReporter):
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, message: str) -> None:
        self.warnings.append(message)


def _run(spark, settings, pipeline):  # type: ignore[no-untyped-def]
    recorder = Recorder()
    runner = PipelineRunner(
        spark,
        pipeline,
        Deployment(pipeline.name, pipeline.version, settings.home),
        settings,
        RunOptions(mode="until_caught_up", report_every_s=3600),
        recorder,
    )
    return runner.run(), recorder


def _shouting(pipeline):  # type: ignore[no-untyped-def]
    plan = pipeline.plan.with_columns(name=pc.utf8_upper(pc.field("name")))
    return dataclasses.replace(pipeline, plan=plan)


def test_code_change_without_new_version_is_reported(spark, settings, broker):
    send(settings, customer_changes(300, seed=40))
    original = get_pipeline(settings.pipelines, "customers")
    snapshot, recorder = _run(spark, settings, original)
    assert recorder.warnings == [] and snapshot.fingerprint_drift == ""

    changed = _shouting(original)
    assert changed.fingerprint != original.fingerprint
    send(settings, customer_changes(50, seed=41))
    snapshot, recorder = _run(spark, settings, changed)
    assert snapshot.fingerprint_drift == original.fingerprint
    assert len(recorder.warnings) == 1 and "bump VERSION" in recorder.warnings[0]


def _run_version(spark, settings, pipeline, **options):  # type: ignore[no-untyped-def]
    runner = PipelineRunner(
        spark,
        pipeline,
        Deployment(pipeline.name, pipeline.version, settings.home),
        settings,
        RunOptions(mode="until_caught_up", report_every_s=3600, **options),
    )
    return runner.run()


def _v2(v1):  # type: ignore[no-untyped-def]
    """Same output as v1, computed differently (a refactoring)."""
    plan = v1.plan.with_columns(email=pc.field("email"))
    return dataclasses.replace(v1, version="v2", plan=plan)


def _buggy(v1):  # type: ignore[no-untyped-def]
    plan = v1.plan.with_columns(email=pc.scalar("broken@example.com"))
    return dataclasses.replace(v1, version="v3", plan=plan)


def test_side_by_side_reprocess_promote_rollback_retire(spark, settings, broker, monkeypatch):
    from bench.support.reference import customers_state, replay, table_state
    from kappa.table_output import resolve_deployment
    from streaming.define.registry import registry
    from streaming.delta.table_reader import last_end_offsets, read_arrow
    from streaming.kafka import offsets as off
    from streaming.versions.live_pointer import history, live_version
    from streaming.versions.promotion import PromotionBlockedError, promote, rollback
    from streaming.versions.retire import RetireRefusedError, retire
    from tests.integration.helpers import table_rows

    v1 = get_pipeline(settings.pipelines, "customers")
    send(settings, customer_changes(2000, seed=42))
    _run_version(spark, settings, v1)
    promote(settings, "customers", "v1")
    assert live_version(settings.home, "customers") == "v1"

    # the code changes to v2; v1 keeps serving and keeps consuming new events
    v2 = _v2(v1)
    send(settings, customer_changes(700, seed=43))
    _run_version(spark, settings, v1)
    live_at = last_end_offsets(Deployment("customers", "v1", settings.home).table_path)
    assert live_at is not None
    _run_version(
        spark, settings, v2, ending_offsets=off.dumps(live_at), max_offsets_per_trigger=600
    )
    send(settings, customer_changes(300, seed=44))  # v1 moves on after the comparison point
    _run_version(spark, settings, v1)
    assert resolve_deployment(settings, "customers", None).version == "v1"

    monkeypatch.setitem(registry(settings.pipelines), "customers", v2)
    done = promote(settings, "customers", "v2")
    assert done.comparison.passed
    assert resolve_deployment(settings, "customers", None).version == "v2"

    assert rollback(settings, "customers").to_version == "v1"
    assert resolve_deployment(settings, "customers", None).version == "v1"
    assert promote(settings, "customers", "v2").switch.to_version == "v2"

    with pytest.raises(RetireRefusedError, match="is live"):
        retire(Deployment("customers", "v2", settings.home))
    v1_paths = Deployment("customers", "v1", settings.home)
    retire(v1_paths)
    assert not v1_paths.table_path.exists() and not v1_paths.checkpoint_path.exists()
    with pytest.raises(PromotionBlockedError, match="retired"):
        rollback(settings, "customers")

    _run_version(spark, settings, v2)  # the live v2 catches up with everything
    expected = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
    assert table_rows(settings, "customers", version="v2") == expected
    live_rows = read_arrow(resolve_deployment(settings, "customers", None).table_path)
    assert table_state(live_rows.to_pylist(), "customer_id") == expected
    assert [(s.from_version, s.to_version) for s in history(settings.home, "customers")] == [
        (None, "v1"),
        ("v1", "v2"),
        ("v2", "v1"),
        ("v1", "v2"),
    ]

    # a buggy v3 is compared at v2's offsets and cannot be promoted
    v3 = _buggy(v1)
    at = last_end_offsets(Deployment("customers", "v2", settings.home).table_path)
    _run_version(spark, settings, v3, ending_offsets=off.dumps(at))
    monkeypatch.setitem(registry(settings.pipelines), "customers", v3)
    with pytest.raises(PromotionBlockedError, match="email"):
        promote(settings, "customers", "v3")
    assert live_version(settings.home, "customers") == "v2"

    # the UI job refuses too, and says why
    from assets.versions.jobs import promote_version

    result = promote_version.execute_in_process(
        run_config={
            "ops": {"compare_and_promote": {"config": {"pipeline": "customers", "version": "v3"}}}
        },
        resources=_resources(settings),
        raise_on_error=False,
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "email" in failure.step_failure_data.error.message
    assert live_version(settings.home, "customers") == "v2"


def _resources(settings):  # type: ignore[no-untyped-def]
    return {"kappa": KappaSettings(home=str(settings.home)), "spark": spark_resource(settings)}
