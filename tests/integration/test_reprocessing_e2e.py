"""Side-by-side reprocessing end to end, driven by Dagster's sensors and jobs.

A real `dagster dev` (webserver + daemon) and embedded broker, events produced throughout:
v1 live -> the pipeline's code changes to v2 and the code location is reloaded -> the
new-version sensor starts v2 from the earliest offset while v1 keeps serving -> the candidate
sensor sees v2 caught up, compares at equal offsets (blocking checks) and promotes it (policy
auto) -> readers see v2 -> rollback job -> readers see v1 -> promote job -> retire job removes v1
-> the live table equals the independent reference.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance

from bench.support.producing import customer_changes, send
from bench.support.reference import Record, customers_state, log_ends, replay, table_state
from kappa.broker import EmbeddedBroker
from streaming.delta.table_reader import commits, last_end_offsets, read_arrow
from streaming.deployment import Deployment
from streaming.kafka import offsets as off
from streaming.versions.live_pointer import history, live_table_path, live_version
from streaming.versions.promotion import comparison_offsets
from streaming.wait import wait_until
from tests.integration.dagster_platform import Platform, running_platform
from tests.integration.user_code import customers_module, user_package

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MODULE = "e2e_pipelines.customers"
V1 = customers_module("v1", options=', promotion="auto"')
# v2 normalises emails (already lower-case in the data): a refactor that must compare clean.
V2 = customers_module(
    "v2",
    change='.with_columns(email=pc.utf8_lower(pc.field("email")))',
    options=', promotion="auto"',
)
FAST = {"mode": "continuous", "trigger_interval": "0.5 seconds", "report_every_s": 2.0}


@pytest.fixture(scope="module")
def code_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with user_package(tmp_path_factory.mktemp("user_code"), "e2e_pipelines", V1) as package:
        yield package


@pytest.fixture(scope="module")
def platform(
    code_dir: Path, tmp_path_factory: pytest.TempPathFactory, shared_broker: EmbeddedBroker
) -> Iterator[Platform]:
    home = tmp_path_factory.mktemp("reprocessing")
    with running_platform(home, shared_broker, pipelines=MODULE) as running:
        yield running


class Producer(threading.Thread):
    """Keeps events arriving in small batches until stopped (load, not synchronisation)."""

    def __init__(self, platform: Platform) -> None:
        super().__init__(daemon=True)
        self.platform = platform
        self.stopped = threading.Event()
        self.sent = 0

    def run(self) -> None:
        seed = 1000
        while not self.stopped.is_set():
            self.sent += send(self.platform.settings, customer_changes(50, seed=seed))
            seed += 1
            self.stopped.wait(0.5)


def _deployment(platform: Platform, version: str) -> Deployment:
    return Deployment("customers", version, platform.settings.home)


def _prefix(records: list[Record], at: off.OffsetMap) -> list[Record]:
    return [r for r in records if r.offset < at.get(r.topic, {}).get(r.partition, 0)]


def _state_at(platform: Platform, version: str, table_version: int | None = None) -> dict:
    path = _deployment(platform, version).table_path
    return table_state(read_arrow(path, table_version).to_pylist(), "customer_id")


def _reference(platform: Platform, at: off.OffsetMap) -> dict:
    records = replay(platform.settings.kafka.bootstrap_servers, "customers")
    return customers_state(_prefix(records, at))


def _runs(platform: Platform, job: str, **tags: str) -> list[dict[str, Any]]:
    filters = {"pipelineName": job, "tags": [{"key": k, "value": v} for k, v in tags.items()]}
    data = platform.api.query(
        """query($filter: RunsFilter) { runsOrError(filter: $filter) {
             ... on Runs { results { runId status tags { key value } } } } }""",
        {"filter": filters},
    )
    return data["runsOrError"]["results"]


def _submit(platform: Platform, job: str, op: str, config: dict[str, Any]) -> str:
    run_id = platform.client.submit_job_execution(job, run_config={"ops": {op: {"config": config}}})
    assert platform.wait_status(run_id, {"SUCCESS", "FAILURE"}, timeout_s=300) == "SUCCESS"
    return run_id


def _live_reader_state(platform: Platform) -> tuple[str, dict]:
    """What a reader outside Dagster sees: the live pointer's table, at its latest commit."""
    path = live_table_path(platform.settings.home, "customers")
    return path.name, table_state(read_arrow(path).to_pylist(), "customer_id")


@pytest.mark.timeout(1500)  # three Spark JVMs and Dagster on two cores: minutes, not seconds
def test_sensor_driven_reprocess_promote_rollback_retire(platform: Platform, code_dir: Path):
    settings = platform.settings
    home = settings.home
    send(settings, customer_changes(3000, seed=7))  # history from before v1 existed
    producer = Producer(platform)
    producer.start()
    try:
        # v1 is deployed from the UI and becomes live (first deployment)
        v1_run = platform.launch("customers", **FAST)
        assert wait_until(
            lambda: (
                live_version(home, "customers") == "v1"
                and last_end_offsets(_deployment(platform, "v1").table_path) is not None
            ),
            timeout_s=180,
        ), "v1 did not start"

        # the code changes to v2; a code-location reload is all the user does
        (code_dir / "customers.py").write_text(V2)
        platform.client.reload_repository_location("kappa")
        v1_version_at_launch = len(commits(_deployment(platform, "v1").table_path))
        assert wait_until(
            lambda: _runs(platform, "deploy_customers", **{"kappa/version": "v2"}),
            timeout_s=120,
            interval_s=1,
        ), "the new-version sensor did not launch v2"
        [v2_run] = _runs(platform, "deploy_customers", **{"kappa/version": "v2"})
        tags = {t["key"]: t["value"] for t in v2_run["tags"]}
        assert tags["kappa/role"] == "candidate"
        assert "differs from live v1" in tags["kappa/reason"]

        # the candidate sensor compares v2 at equal offsets and promotes it (policy auto)
        assert wait_until(lambda: live_version(home, "customers") == "v2", 420, 1), (
            f"v2 was not promoted; runs: {_runs(platform, 'promote_version')}"
        )
        promoted = history(home, "customers")[-1]
        assert (promoted.from_version, promoted.to_version) == ("v1", "v2")
        assert promoted.comparison and promoted.comparison["passed"] is True
        assert promoted.actor.startswith("dagster run")
        # v1 kept serving and updating its own table while v2 rebuilt from the earliest offset
        assert len(commits(_deployment(platform, "v1").table_path)) > v1_version_at_launch
        assert platform.status(v1_run) == "STARTED"

        # the comparison used both tables at exactly the same input offsets
        where = comparison_offsets(settings, "customers", "v1", "v2")
        at = off.from_spark(where["offsets"])
        expected = _reference(platform, at)
        assert len(expected) > 250  # includes keys only the pre-v1 history has
        assert _state_at(platform, "v1", where["old_table_version"]) == expected
        assert _state_at(platform, "v2", where["new_table_version"]) == expected
        _assert_candidate_checks_passed(platform, where["offsets"])

        # readers resolve the pipeline to v2 now
        assert _live_reader_state(platform)[0] == "customers__v2"

        # rollback from the UI: readers see v1 again, instantly
        _submit(platform, "rollback_version", "rollback_live", {"pipeline": "customers"})
        assert live_version(home, "customers") == "v1"
        assert _live_reader_state(platform)[0] == "customers__v1"

        # promote again from the UI (compared again against the live v1)
        _submit(
            platform,
            "promote_version",
            "compare_and_promote",
            {"pipeline": "customers", "version": "v2"},
        )
        assert live_version(home, "customers") == "v2"

        # retire v1 from the UI: its run stops and its files are gone
        _submit(
            platform, "retire_version", "retire_one", {"pipeline": "customers", "version": "v1"}
        )
        v1 = _deployment(platform, "v1")
        assert not v1.table_path.exists() and not v1.checkpoint_path.exists()
        platform.wait_status(v1_run, {"CANCELED"}, timeout_s=60)
    finally:
        producer.stopped.set()
        producer.join(timeout=30)

    # with the producer stopped, the live table converges on the whole log
    records = replay(settings.kafka.bootstrap_servers, "customers")
    ends = log_ends(records)
    assert wait_until(
        lambda: last_end_offsets(_deployment(platform, "v2").table_path) == ends,
        timeout_s=120,
    )
    assert _live_reader_state(platform) == ("customers__v2", customers_state(records))
    assert [(s.from_version, s.to_version) for s in history(home, "customers")] == [
        (None, "v1"),
        ("v1", "v2"),
        ("v2", "v1"),
        ("v1", "v2"),
    ]


def _assert_candidate_checks_passed(platform: Platform, offsets: dict[str, Any]) -> None:
    """The promotion reported the three blocking checks, passed, at the compared offsets."""
    instance = DagsterInstance.from_config(str(platform.settings.home.dagster))
    try:
        for name in ("candidate_schema", "candidate_keys", "candidate_values"):
            key = AssetCheckKey(AssetKey(["tables", "customers"]), name)
            [record] = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
            evaluation = record.event.dagster_event.event_specific_data
            assert evaluation.passed, (name, evaluation.description)
            assert "data_docs" in evaluation.metadata
        metadata = evaluation.metadata
        assert metadata["match_rate.email"].value == 1.0
        assert metadata["at_offsets"].value == offsets
    finally:
        instance.dispose()
