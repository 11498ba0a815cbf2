"""Materializing a version of a table from its asset page is a deployment run: it never runs
the candidate comparison checks (comparing is the promotion's job), so an until_caught_up run
started there ends in success, on the live version and on a candidate alike. Runs are launched
the way the UI's Materialize button launches them: the implicit asset job with the table, every
check the UI lists for it, and the chosen partition (version)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.support.producing import customer_changes, send
from bench.support.reference import customers_state, replay
from streaming.dagster_names import (
    PARTITION_TAG,
    deploy_op_name,
    table_key_path,
    versions_partitions_name,
)
from streaming.versions.live_pointer import live_version
from tests.integration.dagster_platform import Platform, running_platform
from tests.integration.helpers import table_rows

pytestmark = [pytest.mark.integration, pytest.mark.slow]

_CHECKS = """
query Checks($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    ... on AssetNode { assetChecksOrError { ... on AssetChecks { checks { name jobNames } } } }
  }
  repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } }
}
"""

_LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}
"""

_PLANNED = """
query R($id: ID!) { runOrError(runId: $id) { ... on Run { assetCheckSelection { name } } } }
"""

_CHECK_EVALUATIONS = """
query Events($runId: ID!) {
  logsForRun(runId: $runId, limit: 5000) {
    ... on EventConnection {
      events {
        __typename
        ... on AssetCheckEvaluationEvent { evaluation { checkName success description } }
      }
    }
  }
}
"""

ASSET_JOB = "__ASSET_JOB"
GATE = {"candidate_schema", "candidate_keys", "candidate_values"}


def materialize_from_asset_page(
    platform: Platform, pipeline: str, version: str, config: dict[str, Any]
) -> str:
    """What the asset page's Materialize (partition chosen, launch config) sends."""
    platform.api.add_partition(versions_partitions_name(pipeline), version)
    key = {"path": table_key_path(pipeline)}
    found = platform.api.query(_CHECKS, {"key": key})
    checks = found["assetNodeOrError"]["assetChecksOrError"]["checks"]
    repository = found["repositoriesOrError"]["nodes"][0]
    params = {
        "mode": "default",
        "runConfigData": {"ops": {deploy_op_name(pipeline): {"config": config}}},
        "executionMetadata": {"tags": [{"key": PARTITION_TAG, "value": version}]},
        "selector": {
            "repositoryLocationName": repository["location"]["name"],
            "repositoryName": repository["name"],
            "pipelineName": ASSET_JOB,
            "assetSelection": [key],
            "assetCheckSelection": [
                {"assetKey": key, "name": c["name"]}
                for c in checks
                if not c["jobNames"] or ASSET_JOB in c["jobNames"]
            ],
        },
    }
    launched = platform.api.query(_LAUNCH, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def _gate_evaluations(platform: Platform, run_id: str) -> list[dict[str, Any]]:
    events = platform.api.query(_CHECK_EVALUATIONS, {"runId": run_id})["logsForRun"]["events"]
    found = [e["evaluation"] for e in events if e.get("evaluation")]
    return [e for e in found if e["checkName"] in GATE]


def test_until_caught_up_runs_from_the_asset_page_never_compare_and_succeed(
    tmp_path, shared_broker
):
    with running_platform(tmp_path / "home", shared_broker) as platform:
        settings = platform.settings
        send(settings, customer_changes(300, seed=33))
        expected = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
        once = {"mode": "until_caught_up", "report_every_s": 1.0}

        first = materialize_from_asset_page(platform, "customers", "v1", once)
        planned = platform.api.query(_PLANNED, {"id": first})["runOrError"]
        assert {c["name"] for c in planned["assetCheckSelection"]} >= GATE
        assert platform.wait_status(first, {"SUCCESS", "FAILURE"}, 240) == "SUCCESS"
        assert table_rows(settings, "customers", "v1") == expected
        assert live_version(settings.home, "customers") == "v1"
        # The live version has nothing to compare: its planned checks say so instead of
        # staying in progress.
        settled = _gate_evaluations(platform, first)
        assert {e["checkName"] for e in settled} == GATE
        assert all(e["success"] and "not a candidate" in e["description"] for e in settled)

        # v2 is a candidate (v1 is live). A comparison at the end of its run would have
        # compared it at whatever offsets it stopped at; the run deploys, it does not judge.
        second = materialize_from_asset_page(platform, "customers", "v2", once)
        assert platform.wait_status(second, {"SUCCESS", "FAILURE"}, 240) == "SUCCESS"
        assert table_rows(settings, "customers", "v2") == expected
        assert live_version(settings.home, "customers") == "v1"
        assert _gate_evaluations(platform, second) == []
