"""The version sensors' decisions, retention, the versions overview and code pins, on real Delta
tables and a real broker (no Spark, no Dagster: these are the functions the sensors call)."""

from __future__ import annotations

import dataclasses
import json
import sys
import time

import pytest

from bench.support.producing import customer_changes, send
from streaming.define.registry import get_pipeline, registry
from streaming.deployment import Deployment
from streaming.deployment.code_pin import pinned_pipeline
from streaming.settings import Settings
from streaming.versions.alignment import LiveAlignment
from streaming.versions.decisions import candidate_to_launch, comparison_to_run
from streaming.versions.live_pointer import claim_first, switch
from streaming.versions.overview import overview
from streaming.versions.retention import expired_versions
from tests.integration.helpers import commit_customers

pytestmark = pytest.mark.integration


def _v2(settings: Settings, monkeypatch: pytest.MonkeyPatch, **changes: object) -> None:
    v1 = get_pipeline(settings.pipelines, "customers")
    monkeypatch.setitem(
        registry(settings.pipelines), "customers", dataclasses.replace(v1, version="v2", **changes)
    )


def test_new_version_is_launched_once_and_only_when_not_live(settings, broker, monkeypatch):
    send(settings, customer_changes(50, seed=1))
    pipeline = get_pipeline(settings.pipelines, "customers")
    assert not candidate_to_launch(settings, pipeline, "none").act  # nothing live yet
    claim_first(settings.home, "customers", "v1", "first deployment")
    decision = candidate_to_launch(settings, pipeline, "none")
    assert not decision.act and "v1 is live" in decision.reason

    _v2(settings, monkeypatch)
    decision = candidate_to_launch(settings, get_pipeline(settings.pipelines, "customers"), "none")
    assert decision.act and decision.version == "v2" and "differs from live v1" in decision.reason
    assert not candidate_to_launch(
        settings, get_pipeline(settings.pipelines, "customers"), "active"
    ).act
    again = candidate_to_launch(settings, get_pipeline(settings.pipelines, "customers"), "failed")
    assert not again.act and "launched already" in again.reason


def test_candidate_is_compared_when_within_reach_and_not_twice(settings, monkeypatch):
    claim_first(settings.home, "customers", "v1", "first deployment")
    _v2(settings, monkeypatch, promotion="auto")
    pipeline = get_pipeline(settings.pipelines, "customers")
    commit_customers(settings, "v1", {0: 400_000, 1: 400_000})
    commit_customers(settings, "v2", {0: 100_000, 1: 0})
    waiting = comparison_to_run(settings, pipeline, lambda _: "none")
    assert not waiting.act and "12.5% caught up (700000 records behind)" in waiting.reason

    commit_customers(settings, "v2", {0: 400_000, 1: 380_000}, batch=1)
    decision = comparison_to_run(settings, pipeline, lambda _: "none")
    assert decision.act and "auto promotion" in decision.reason
    assert not comparison_to_run(settings, pipeline, lambda _: "active").act
    done = comparison_to_run(settings, pipeline, lambda _: "succeeded")
    assert not done.act and "passed" in done.reason
    # a comparison run that failed before comparing (e.g. not caught up in time) is retried
    assert comparison_to_run(settings, pipeline, lambda _: "failed").act


def test_a_rolled_back_candidate_is_not_promoted_again(settings, monkeypatch):
    """The sensor asks for the comparison runs against the live version the decision read, and
    tags the run with it: after promote v2 then rollback to v1, the comparison v2 passed against
    v1 is found and v2 is not promoted again behind the user's back."""
    claim_first(settings.home, "customers", "v1", "first deployment")
    _v2(settings, monkeypatch, promotion="auto")
    pipeline = get_pipeline(settings.pipelines, "customers")
    commit_customers(settings, "v1", {0: 400_000, 1: 400_000})
    commit_customers(settings, "v2", {0: 400_000, 1: 400_000})
    switch(settings.home, "customers", "v2", "promote")
    switch(settings.home, "customers", "v1", "rollback")
    asked: list[str] = []

    def runs_against(live: str) -> str:
        asked.append(live)
        return "succeeded" if live == "v1" else "none"  # v2 was compared against v1 only

    decision = comparison_to_run(settings, pipeline, runs_against)
    assert asked == ["v1"] and decision.live == "v1"
    assert not decision.act and "v2 passed the comparison with v1" in decision.reason


def test_replaced_versions_expire_after_the_retention_window(settings):
    for version in ("v1", "v2", "v3"):
        commit_customers(settings, version, {0: 10})
    switch(settings.home, "customers", "v1", "first")
    switch(settings.home, "customers", "v2", "promote")
    now = time.time()
    hours = settings.versions.retention_hours
    assert expired_versions(settings, "customers", now) == []
    [expired] = expired_versions(settings, "customers", now + hours * 3600 + 1)
    assert expired.version == "v1"  # v3 was never live: a candidate is not retired by age


def test_overview_shows_live_candidates_progress_and_history(settings):
    commit_customers(settings, "v1", {0: 100, 1: 100})
    commit_customers(settings, "v2", {0: 100, 1: 50})
    switch(settings.home, "customers", "v1", "first deployment")
    view = overview(settings, "customers")
    assert view.live_version == "v1"
    [candidate] = view.candidates
    assert (candidate.version, candidate.behind_live, candidate.caught_up_pct) == ("v2", 50, 75.0)
    assert "| v2 | candidate | no | 50 | 75.0% |" in view.markdown()
    assert "first deployment" in view.history_markdown()


def test_a_non_live_version_follows_the_live_commits(settings):
    commit_customers(settings, "v1", {0: 30, 1: 12})
    switch(settings.home, "customers", "v1", "first")
    candidate = LiveAlignment(Deployment("customers", "v2", settings.home))
    candidate.refresh()
    assert json.loads(candidate.path.read_text()) == {"customers": {"0": 30, "1": 12}}
    progress = candidate.catch_up({"customers": {0: 15, 1: 12}}, {"customers": {0: 0, 1: 0}})
    assert progress is not None and progress.behind == 15 and progress.done_pct == 64.29
    # the live version moves on: so does the cap
    commit_customers(settings, "v1", {0: 40, 1: 12}, batch=1)
    candidate.refresh()
    assert json.loads(candidate.path.read_text()) == {"customers": {"0": 40, "1": 12}}
    switch(settings.home, "customers", "v2", "promote")
    candidate.refresh()
    assert not candidate.path.exists()  # live: no cap


def test_a_deployment_keeps_its_pinned_code_after_the_module_changes(settings, tmp_path):
    package = tmp_path / "pins_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    module = package / "mine.py"
    template = (
        "from dataclasses import replace\n"
        "import pyarrow.compute as pc\n"
        "from pipelines import customers as base\n"
        "PLAN = base.PLAN{}\n"
        "PIPELINE = replace(base.PIPELINE, version={!r}, plan=PLAN)\n"
    )
    module.write_text(template.format("", "v1"))
    sys.path.insert(0, str(tmp_path))
    try:
        import importlib

        import pins_pkg.mine as mine

        pinned = pinned_pipeline_from(settings, mine)
        assert pinned.pinned_at is not None and pinned.pinned_at.exists()
        first = pinned.pipeline.fingerprint
        # the module changes without a version bump
        changed = '.where(pc.field("country") == "DE")'
        module.write_text(template.format(changed, "v1"))
        # the first run goes on with the code and fingerprint it started with (its commits record
        # that fingerprint), not with what the file now says
        assert pinned.pipeline.fingerprint == first
        assert pinned.pipeline.plan is not None and pinned.pipeline.plan.condition is None
        # a restart of v1 runs its pinned code too, with a warning
        importlib.reload(mine)
        again = pinned_pipeline_from(settings, mine)
        assert mine.PLAN.condition is not None  # the module on disk filters now
        assert again.pipeline.fingerprint == first
        assert again.pipeline.plan is not None and again.pipeline.plan.condition is None
        pinned_module = again.pinned_at / "pins_pkg" / "mine.py"  # type: ignore[operator]
        assert changed not in pinned_module.read_text()
        assert "Bump VERSION" in again.warning
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("pins_pkg.mine", None)
        sys.modules.pop("pins_pkg", None)


def pinned_pipeline_from(settings: Settings, module: object):  # type: ignore[no-untyped-def]
    return pinned_pipeline(settings.home, module.PIPELINE, None)  # type: ignore[attr-defined]


def test_pins_live_next_to_the_deployment(settings: Settings) -> None:
    pinned = pinned_pipeline(settings.home, get_pipeline(settings.pipelines, "customers"), "v7")
    assert pinned.pipeline.version == "v7"
    assert pinned.pinned_at == Deployment("customers", "v7", settings.home).code_pin_path


def test_a_new_deployment_can_start_at_a_timestamp(settings, broker):
    from streaming.kafka.log import KafkaLog
    from streaming.kafka.start_position import offsets_at_timestamp

    send(settings, customer_changes(400, seed=5))
    client = settings.kafka.client_config()
    with KafkaLog(client) as log:
        before = log.latest(("customers",))
    cut_ms = int(time.time() * 1000) + 1  # every record after this was produced later
    assert wait_until_clock_passes(cut_ms)
    send(settings, customer_changes(300, seed=6))
    assert offsets_at_timestamp(settings.kafka, ("customers",), cut_ms) == before
    assert offsets_at_timestamp(settings.kafka, ("customers",), 0) == {
        "customers": dict.fromkeys(range(4), 0)
    }


def wait_until_clock_passes(ms: int) -> bool:
    from streaming.wait import wait_until

    return wait_until(lambda: time.time() * 1000 > ms, timeout_s=1.0, interval_s=0.001)
