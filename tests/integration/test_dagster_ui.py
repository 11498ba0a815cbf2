"""The Dagster UI and the `kappa` commands that launch runs, on one platform (one `dagster dev`,
the engine, the test broker). A test's checks hold whatever the tests before it deployed: the
asset-page and `kappa deploy` tests both deploy `customers` and compare its tables with the
whole log.

A person's path through it in headless Chromium: browse the fraud detection's lineage from the
report back to the topics, find the streaming asset in the asset graph, launch it, watch its run
in progress, terminate it. Screenshots are saved to ``test-artifacts/browser/`` (or
``$KAPPA_TEST_ARTIFACTS``).

Materializing a version of a table from its asset page is a deployment run: it never runs the
candidate comparison checks (comparing is the promotion's job), so an until_caught_up run started
there ends in success, on the live version and on a candidate alike. Those runs are launched the
way the UI's Materialize button launches them: the implicit asset job with the table, every check
the UI lists for it, and the chosen partition (version).

`kappa deploy` launches a deployment as the UI does and `kappa stop` stops it; `kappa deployments
list` shows what the UI shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance

from bench.support.producing import customer_changes, send, transactions
from bench.support.reference import customers_state, replay
from kappa.broker import EmbeddedBroker
from streaming.dagster_names import (
    PARTITION_TAG,
    deploy_op_name,
    table_key_path,
    versions_partitions_name,
)
from streaming.deployment import Deployment
from streaming.engine.client import EngineClient
from streaming.settings import Settings
from streaming.versions.live_pointer import live_version
from streaming.wait import wait_until
from tests.integration.browser import (
    CHROMIUM_ARGS,
    artifacts_dir,
    chromium,
    materialize_one_partition,
    skip_first_visit_dialog,
)
from tests.integration.dagster_platform import Platform, running_platform
from tests.integration.helpers import kappa, table_rows
from tests.support.report_table import table_with

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=150)]


@pytest.fixture(scope="module")
def platform(
    tmp_path_factory: pytest.TempPathFactory, shared_broker: EmbeddedBroker
) -> Iterator[Platform]:
    """One platform for the module's tests: they deploy different pipelines."""
    with running_platform(tmp_path_factory.mktemp("ui") / "home", shared_broker) as running:
        yield running


@pytest.fixture(scope="module")
def artifacts() -> Path:
    return artifacts_dir("browser")


def test_launch_and_terminate_a_streaming_asset_from_the_ui(platform: Platform, artifacts: Path):
    from playwright.sync_api import expect, sync_playwright

    executable = chromium()
    skip_first_visit_dialog(platform.api)
    with sync_playwright() as pw:
        send(platform.settings, transactions(500, seed=30))
        platform.api.add_partition(versions_partitions_name("customer_spend"), "v1")
        url = f"http://127.0.0.1:{platform.settings.dagster.port}"
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/assets/tables/customer_spend?view=lineage")
            node = page.get_by_text("customer_spend", exact=True).last
            expect(node).to_be_visible(timeout=30_000)
            expect(page.get_by_text("transactions", exact=True).last).to_be_visible()
            page.screenshot(path=str(artifacts / "1-asset-graph.png"))

            # The fraud detection's lineage, read from the report back to the input topics:
            # zoomed out until the whole graph fits (long names are shortened in the middle).
            page.goto(
                f"{url}/assets/reports/alerts_per_country?view=lineage&lineageScope=upstream"
                "&lineageDepth=6"
            )
            expect(page.get_by_text("Graph depth")).to_be_visible(timeout=30_000)
            for _ in range(15):
                page.get_by_role("img", name="zoom_out").click()
            nodes = {
                "customers": 2,  # the topic, and the table the report reads
                "transactions": 1,
                "transact…_enriched": 2,  # the table and its published topic
                "fraud_alerts": 1,
                "alerts_per_country": 1,
            }
            for name, count in nodes.items():
                located = page.locator("foreignObject").get_by_text(name, exact=True)
                assert wait_until(lambda n=located, c=count: n.count() == c, 30), (name, count)
                for i in range(count):
                    expect(located.nth(i)).to_be_in_viewport()
            page.screenshot(path=str(artifacts / "1b-fraud-lineage.png"))
            page.goto(f"{url}/assets/tables/customer_spend?view=lineage")

            # The table is partitioned by version: the dialog picks v1, its only partition.
            materialize_one_partition(page)
            assert wait_until(lambda: platform.api.active_runs(), timeout_s=30, interval_s=0.5)
            [run] = platform.api.active_runs()
            assert wait_until(lambda: platform.holder_pid("customer_spend") is not None, 120, 0.5)
            # (the deployment starts as the run launches, before the run's process is up)
            platform.wait_status(run.run_id, {"STARTED"}, 120)

            page.goto(f"{url}/runs/{run.run_id}")
            expect(page.get_by_text("Started", exact=True).first).to_be_visible(timeout=30_000)
            expect(page.get_by_text("tables__customer_spend").first).to_be_visible()
            page.screenshot(path=str(artifacts / "2-run-in-progress.png"))

            page.get_by_role("button", name="Terminate").click()
            page.get_by_role("dialog").get_by_role("button", name="Terminate").click()
            platform.wait_status(run.run_id, {"CANCELED"}, timeout_s=45)
            expect(page.get_by_text("Canceled", exact=True).first).to_be_visible(timeout=30_000)
            page.screenshot(path=str(artifacts / "3-run-terminated.png"))
            assert platform.holder_pid("customer_spend") is None
            # The interrupt would reach the step's retry policy and start the deployment again
            # in the run's process; the step ends instead, saying it was terminated, and is not
            # retried: the deployment started once.
            with DagsterInstance.from_config(str(platform.settings.home.dagster)) as instance:
                logs = instance.all_logs(run.run_id)
            events = [e.dagster_event for e in logs if e.dagster_event]
            kinds = {e.event_type_value for e in events}
            starts = [e.message for e in logs if "running in the engine" in (e.message or "")]
            failures = [e.step_failure_data.user_failure_data for e in events if e.is_step_failure]
            assert "STEP_UP_FOR_RETRY" not in kinds and len(starts) == 1
            # One process per deployment: the step ran in the run worker.
            assert any("Executing steps in process" in (e.message or "") for e in logs)
            assert [f.description for f in failures if f] == [
                "customer_spend__v1: the run was terminated; the deployment stopped at a batch "
                "boundary"
            ]
        finally:
            browser.close()


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


def test_until_caught_up_runs_from_the_asset_page_never_compare_and_succeed(platform: Platform):
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


def _rows(settings: Settings) -> dict | None:
    try:
        return table_rows(settings, "customers", "v1")
    except FileNotFoundError:
        return None


def _listed(settings: Settings) -> dict[str, dict[str, str]]:
    listed = kappa(settings, "deployments", "list")
    assert listed.returncode == 0, listed.stderr
    rows = table_with(listed.stdout, "pipeline")
    return {r["pipeline"]: {k: v for k, v in r.items() if k != "pipeline"} for r in rows}


def _run_id(output: str) -> str:
    return output.split(" as run ", 1)[1].split(":", 1)[0]


def test_kappa_deploy_then_stop(platform: Platform):
    settings = platform.settings
    send(settings, customer_changes(300, seed=31))

    deployed = kappa(settings, "deploy", "customers")
    assert deployed.returncode == 0, deployed.stderr
    run_id = _run_id(deployed.stdout)
    assert wait_until(lambda: platform.holder_pid("customers") is not None, 120, 0.5)
    platform.wait_status(run_id, {"STARTED"}, 120)
    # The launch started the query in the engine before the run's process had loaded the code,
    # and the run's step took it over.
    events = _run_events(platform, run_id)
    early = [e for e in events if "started in the engine as the run launched" in e["message"]]
    step_start = [e for e in events if e["eventType"] == "STEP_START"]
    assert early and step_start, [e["message"] for e in events]
    assert int(early[0]["timestamp"]) <= int(step_start[0]["timestamp"])
    assert wait_until(lambda: _engine_view(settings, "customers__v1")["claimed"], 60, 0.5)
    assert _engine_view(settings, "customers__v1")["run_id"] == run_id
    log = replay(settings.kafka.bootstrap_servers, "customers")
    # v1 consumes: its table reaches the whole log (a later version never reads past it).
    assert wait_until(lambda: _rows(settings) == customers_state(log), 120, 1.0)

    # `kappa deployments list` shows what the UI shows: the running version with its run,
    # lag and rows; a pipeline with no running version as such.
    expected = {
        "version": "v1",
        "status": "running",
        "run_id": run_id,
        "lag": "0",
        "rows": str(len(customers_state(log))),
    }

    def listed_as_expected() -> bool:
        row = _listed(settings).get("customers", {})
        return {k: row.get(k) for k in expected} == expected

    # A report travels from the deployment through Pipes and Dagster's event log to the
    # listing: under load that takes as long as the deployment's own start.
    assert wait_until(listed_as_expected, 120, 1.0), (expected, _listed(settings)["customers"])
    assert _listed(settings)["customer_spend"]["status"] == "not running"

    again = kappa(settings, "deploy", "customers")
    assert again.returncode == 2
    assert f"customers v1 is already running (run {run_id})" in again.stderr

    stopped = kappa(settings, "stop", "customers")
    assert stopped.returncode == 0, stopped.stderr
    platform.wait_status(run_id, {"CANCELED"}, 60)
    assert platform.holder_pid("customers") is None
    assert _listed(settings)["customers"]["status"] == "not running"

    once = kappa(settings, "deploy", "customers", "--version", "v2", "--mode", "until_caught_up")
    assert once.returncode == 0, once.stderr
    platform.wait_status(_run_id(once.stdout), {"SUCCESS"}, 180)
    assert table_rows(settings, "customers", "v2") == customers_state(log)
    assert Deployment("customers", "v2", settings.home).checkpoint_path.exists()

    unknown = kappa(settings, "deploy", "orders")
    assert unknown.returncode == 2 and "orders" in unknown.stderr


def _run_events(platform: Platform, run_id: str) -> list[dict[str, Any]]:
    """The run's event log (message, type, timestamp in ms), oldest first."""
    document = """
    query($runId: ID!) { logsForRun(runId: $runId) { __typename
      ... on EventConnection { events { __typename
        ... on MessageEvent { message eventType timestamp } } } } }"""
    answer = platform.api.query(document, {"runId": run_id})["logsForRun"]
    return [e for e in answer.get("events", []) if "message" in e]


def _engine_view(settings: Settings, deployment: str) -> dict[str, Any]:
    return EngineClient(settings.home).deployment(deployment)
