"""A query whose source process was slow to start is started again; other failures are not.

Spark gives a query's Python source process a fixed 10 s to connect back, which a machine
starting a dozen deployments at once can exceed. The query itself stands in for Spark here.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from streaming.engine import hosted
from streaming.engine.hosted import SLOW_START, START_ATTEMPTS, DeploymentRequest, HostedDeployment
from streaming.errors import RunError
from streaming.run.options import RunOptions
from streaming.settings import load_settings


class _Query:
    """Fails with each of ``failures`` in turn, then ends normally."""

    def __init__(self, failures: list[str]) -> None:
        self.failures = failures
        self.runs = 0

    def runner(self, *args: Any, **kwargs: Any) -> SimpleNamespace:
        return SimpleNamespace(run=self.run)

    def run(self) -> None:
        self.runs += 1
        if self.failures:
            raise RunError(self.failures.pop(0))


@pytest.fixture
def deployment(monkeypatch, tmp_path):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(hosted, "START_RETRY_S", 0.0)
    settings = load_settings(env={}, overrides={"home": str(tmp_path)})
    request = DeploymentRequest("customers", "v1", RunOptions())
    return HostedDeployment(request, settings, spark=None)  # type: ignore[arg-type]


def _run(monkeypatch, deployment: HostedDeployment, query: _Query) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(hosted, "PipelineRunner", query.runner)
    started = SimpleNamespace(pipeline=None, deployment=None, options=RunOptions())
    deployment._run_query(started)  # type: ignore[arg-type]


def test_a_slow_source_start_is_retried_and_said(monkeypatch, deployment):  # type: ignore[no-untyped-def]
    slow = f"streaming query customers__v1 failed: org.apache.spark.SparkException: {SLOW_START}."
    query = _Query([slow, slow])
    _run(monkeypatch, deployment, query)
    assert query.runs == 3
    warnings = [e["message"] for e in deployment.events.since(0)[0] if e["kind"] == "warning"]
    assert len(warnings) == 2 and "starting the query again from its checkpoint" in warnings[0]


def test_it_gives_up_after_its_attempts_and_other_failures_are_not_retried(monkeypatch, deployment):  # type: ignore[no-untyped-def]
    query = _Query([SLOW_START] * START_ATTEMPTS)
    with pytest.raises(RunError, match=SLOW_START):
        _run(monkeypatch, deployment, query)
    assert query.runs == START_ATTEMPTS

    query = _Query(["streaming query customers__v1 failed: ValueError: bad record"])
    with pytest.raises(RunError, match="bad record"):
        _run(monkeypatch, deployment, query)
    assert query.runs == 1
