"""`kappa deployments list` shows one row per running version with its role and progress, from
what Dagster's GraphQL API answers (a stand-in server on 127.0.0.1 plays the running Dagster)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bench.support.settings import private_settings
from kappa.cli import main
from kappa.dagster_api import DagsterApi
from kappa.deployments import deployment_statuses
from tests.support.graphql_stand_in import GraphQLStandIn, serving


def _run(run_id: str, job: str, tags: dict[str, str], assets: list[list[str]]) -> dict[str, Any]:
    return {
        "runId": run_id,
        "status": "STARTED",
        "jobName": job,
        "tags": [{"key": k, "value": v} for k, v in tags.items()],
        "startTime": 1.0,
        "endTime": None,
        "assetSelection": [{"path": p} for p in assets],
    }


def _report(run_id: str, version: str, **values: Any) -> dict[str, Any]:
    entries = []
    for label, value in values.items():
        field = {int: "intValue", float: "floatValue", str: "text"}[type(value)]
        entries.append({"label": label.replace("__", "/"), field: value})
    return {
        "runId": run_id,
        "timestamp": "1700000000000",
        "partition": version,
        "metadataEntries": entries,
    }


RUNS = [
    _run("run-v1", "deploy_customers", {"kappa/version": "v1", "dagster/partition": "v1"}, []),
    # launched from the asset page: known by its asset and partition before it tags itself
    _run("run-v2", "__ASSET_JOB", {"dagster/partition": "v2"}, [["tables", "customers"]]),
    # a promotion carries the pipeline's tags but is no deployment
    _run(
        "run-promote", "promote_version", {"kappa/pipeline": "customers", "kappa/version": "v2"}, []
    ),
    # customer_spend's last deployment failed: the list says how
    {
        **_run("run-failed", "deploy_customer_spend", {"dagster/partition": "v1"}, []),
        "status": "FAILURE",
    },
]
REFUSAL = "customer_spend: input 'transactions' is keyed by txn_id, the state by customer_id"
REPORTS = {
    "v1": {
        "assetMaterializations": [
            _report(
                "run-v1", "v1", state="running", role="live", total_lag=5, dagster__row_count=980
            )
        ],
        "assetObservations": [],
    },
    "v2": {
        "assetMaterializations": [],
        "assetObservations": [
            _report("run-v2", "v2", role="candidate", catch_up_pct=63.04, catch_up_eta_s="41"),
            _report(
                "run-v2",
                "v2",
                state="catching_up",
                role="candidate",
                total_lag=4100,
                catch_up_pct=63.04,
                catch_up_eta_s="41",
                dagster__row_count=612,
            ),
        ],
    },
}


class _Dagster(GraphQLStandIn):
    def do_POST(self) -> None:  # the GraphQL endpoint
        body = json.loads(self.query_text())
        query, variables = body["query"], body.get("variables") or {}
        if "runsOrError" in query:
            statuses = (variables.get("filter") or {}).get("statuses") or []
            runs = [r for r in RUNS if not statuses or r["status"] in statuses]
            data: dict[str, Any] = {"runsOrError": {"__typename": "Runs", "results": runs}}
        elif "runOrError" in query:
            failure = {
                "__typename": "ExecutionStepFailureEvent",
                "error": None,
                "failureMetadata": {"description": REFUSAL},
            }
            events = [{"__typename": "RunStartEvent"}, failure]
            data = {"runOrError": {"__typename": "Run", "eventConnection": {"events": events}}}
        elif variables["key"]["path"] == ["tables", "customers"]:
            [version] = variables["partitions"]
            data = {"assetOrError": {"__typename": "Asset", **REPORTS[version]}}
        else:
            data = {"assetOrError": {"__typename": "AssetNotFoundError"}}
        self.answer(data)


@pytest.fixture
def dagster_port() -> Iterator[int]:
    with serving(_Dagster) as port:
        yield port


def test_one_row_per_running_version_with_role_and_progress(
    dagster_port, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("KAPPA_DAGSTER_PORT", str(dagster_port))
    monkeypatch.setenv("KAPPA_PIPELINES", "pipelines.customers,pipelines.customer_spend")
    code = main(["--home", str(tmp_path / "home"), "deployments", "list"])
    out = capsys.readouterr().out
    assert code == 0, out
    header, _rule, *lines = out.splitlines()
    assert header.split() == [
        "pipeline",
        "version",
        "role",
        "status",
        "progress",
        "lag",
        "rows",
        "run_id",
        "note",
    ]
    rows = [line.split() for line in lines]
    assert " ".join(rows[0]) == f"customer_spend not running last run run-fail failed: {REFUSAL}"
    assert rows[1:] == [
        ["customers", "v1", "live", "running", "5", "980", "run-v1"],
        [
            "customers",
            "v2",
            "candidate",
            "catching_up",
            "63.0%",
            "(ETA",
            "41",
            "s)",
            "4100",
            "612",
            "run-v2",
        ],
    ]


class _Starting(GraphQLStandIn):
    """A deploy run whose process is loading: STARTING, with no report of its own yet."""

    def do_POST(self) -> None:
        query = json.loads(self.query_text())["query"]
        if "runsOrError" in query:
            run = {**_run("run-v3", "deploy_customers", {"dagster/partition": "v3"}, [])}
            run["status"] = "STARTING"
            data: dict[str, Any] = {"runsOrError": {"__typename": "Runs", "results": [run]}}
        else:
            data = {"assetOrError": {"__typename": "AssetNotFoundError"}}
        self.answer(data)


@pytest.mark.parametrize(
    ("engine", "note"),
    [
        (
            {"customers__v3": {"state": "running"}},
            "running in the engine; its run's process is starting and takes it over",
        ),
        (None, "its run's process is starting (loading the code location)"),
    ],
)
def test_a_starting_run_says_what_it_waits_for(engine, note, tmp_path):
    with serving(_Starting) as port:
        settings = private_settings(tmp_path / "home")
        dagster = settings.dagster.model_copy(update={"port": port})
        api = DagsterApi(settings.model_copy(update={"dagster": dagster}))
        [status] = deployment_statuses(api, ["customers"], engine)
    assert (status.version, status.status, status.note) == ("v3", "starting", note)
