"""Versions: a code change without a version bump is reported, not silently mixed in."""

from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql import functions as F

from streaming.deployment import Deployment
from streaming.pipelines import get_pipeline
from streaming.reporting import NullReporter
from streaming.runner import PipelineRunner, RunOptions
from tests.producing import customer_changes, send

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
        settings.kafka.client_config(),
        RunOptions(report_every_s=3600),
        recorder,
    )
    return runner.run(), recorder


def _shouting_transform(records):  # type: ignore[no-untyped-def]
    from streaming.pipelines.customers import transform

    return transform(records).withColumn("name", F.upper("name"))


def test_code_change_without_new_version_is_reported(spark, settings, broker):
    send(settings, customer_changes(300, seed=40))
    original = get_pipeline("customers")
    snapshot, recorder = _run(spark, settings, original)
    assert recorder.warnings == [] and snapshot.fingerprint_drift == ""

    changed = dataclasses.replace(original, transform=_shouting_transform)
    assert changed.fingerprint != original.fingerprint
    send(settings, customer_changes(50, seed=41))
    snapshot, recorder = _run(spark, settings, changed)
    assert snapshot.fingerprint_drift == original.fingerprint
    assert len(recorder.warnings) == 1 and "bump VERSION" in recorder.warnings[0]
