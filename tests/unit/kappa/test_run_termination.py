"""Terminating runs through Dagster's GraphQL (``kappa stop``, Ctrl-C on ``kappa up``): Dagster
cannot terminate a run still STARTING, though its deployment may already run in the engine, so
such a run is terminated once it has started, or marked canceled when it does not start in time."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from kappa.dagster_api import DagsterApi
from streaming.settings import load_settings
from tests.support.graphql_stand_in import GraphQLStandIn, serving


class _Dagster(GraphQLStandIn):
    """Run ``started`` is STARTED; run ``starting`` answers STARTING to its first
    ``starting_for`` status queries, then STARTED. Terminations are recorded."""

    starting_for = 0
    asked = 0
    terminations: ClassVar[list[tuple[str, tuple[str, ...]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.query_text())
        variables: dict[str, Any] = body.get("variables") or {}
        if "terminateRuns" in body["query"]:
            type(self).terminations.append((variables["policy"], tuple(variables["runIds"])))
            self.answer({"terminateRuns": {"__typename": "TerminateRunsResult"}})
            return
        type(self).asked += 1
        ids = variables["filter"]["runIds"]
        still = type(self).asked <= type(self).starting_for
        results = [
            {
                "runId": i,
                "status": "STARTING" if i == "starting" and still else "STARTED",
                "jobName": "deploy_customers",
                "tags": [],
            }
            for i in ids
        ]
        self.answer({"runsOrError": {"__typename": "Runs", "results": results}})


@pytest.fixture
def api(tmp_path):  # type: ignore[no-untyped-def]
    _Dagster.asked, _Dagster.terminations = 0, []
    with serving(_Dagster) as port:
        settings = load_settings(env={}, overrides={"home": str(tmp_path), "dagster.port": port})
        yield DagsterApi(settings)


def test_a_starting_run_is_terminated_once_it_has_started(api):  # type: ignore[no-untyped-def]
    _Dagster.starting_for = 3

    api.terminate(["started", "starting"], starting_wait_s=30)

    assert _Dagster.terminations == [
        ("SAFE_TERMINATE", ("started",)),
        ("SAFE_TERMINATE", ("starting",)),
    ]
    assert _Dagster.asked == 4  # the starting run was asked about until it had started


def test_a_run_that_does_not_start_in_time_is_marked_canceled(api):  # type: ignore[no-untyped-def]
    _Dagster.starting_for = 10**6

    api.terminate(["starting"], starting_wait_s=1.0)

    assert _Dagster.terminations == [("MARK_AS_CANCELED_IMMEDIATELY", ("starting",))]
