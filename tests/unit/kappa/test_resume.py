"""Which Dagster runs are streaming deployments to resume after a platform restart, and a resume
through a Dagster too busy to answer at first."""

from __future__ import annotations

import pytest

from kappa import resume
from kappa.dagster_api import DagsterApi
from kappa.resume import _pipeline_of
from streaming.settings import load_settings
from tests.support.graphql_stand_in import GraphQLStandIn, serving


def test_deployment_runs_are_recognised_by_job_or_asset_selection():
    pipelines = ["customers", "customer_spend"]
    deploy = {"jobName": "deploy_customers", "assetSelection": []}
    from_ui = {"jobName": "__ASSET_JOB", "assetSelection": [{"path": ["tables", "customer_spend"]}]}
    quality = {"jobName": "__ASSET_JOB", "assetSelection": [{"path": ["kafka", "customers"]}]}

    assert _pipeline_of(deploy, pipelines) == "customers"
    assert _pipeline_of(from_ui, pipelines) == "customer_spend"
    assert _pipeline_of(quality, pipelines) is None
    assert _pipeline_of({"jobName": "promote_version", "assetSelection": []}, pipelines) is None


class _Dagster(GraphQLStandIn):
    """Dagster's GraphQL endpoint as the resume sees it: busy (HTTP 503) for the first
    ``busy_for`` requests, then up with the code loaded and no active run."""

    busy_for = 0
    seen = 0

    def do_POST(self) -> None:
        body = self.query_text()
        type(self).seen += 1
        if "repositoriesOrError" in body:  # the code-loaded probe, answered from the start
            data = {"repositoriesOrError": {"__typename": "RepositoryConnection", "nodes": [{}]}}
        elif type(self).seen <= type(self).busy_for:
            self.send_response(503)
            self.end_headers()
            return
        else:
            data = {"runsOrError": {"__typename": "Runs", "results": []}}
        self.answer(data)


@pytest.fixture
def dagster(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(resume, "RESUME_RETRY_S", 0.01)
    monkeypatch.setattr(resume, "RESUME_TIMEOUT_S", 2.0)
    with serving(_Dagster) as port:
        yield load_settings(env={}, overrides={"home": str(tmp_path), "dagster.port": port})


def test_a_busy_dagster_is_asked_again_until_the_resume_gets_through(dagster, capsys):
    _Dagster.busy_for, _Dagster.seen = 3, 0

    assert resume.resume_at_start(dagster, DagsterApi(dagster), 0.0, set(), lambda: False)
    assert _Dagster.seen > 3
    assert "could not resume" not in capsys.readouterr().err


def test_a_resume_that_never_gets_through_says_so_and_keeps_the_list(dagster, capsys):
    _Dagster.busy_for, _Dagster.seen = 10**6, 0

    assert not resume.resume_at_start(dagster, DagsterApi(dagster), 0.0, set(), lambda: False)
    err = capsys.readouterr().err
    assert "could not resume the previous deployments in 2 s" in err
    assert "start the platform again to retry" in err
