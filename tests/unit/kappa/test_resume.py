"""Which Dagster runs are streaming deployments to resume after a platform restart."""

from __future__ import annotations

from kappa.resume import _pipeline_of


def test_deployment_runs_are_recognised_by_job_or_asset_selection():
    pipelines = ["customers", "customer_spend"]
    deploy = {"jobName": "deploy_customers", "assetSelection": []}
    from_ui = {"jobName": "__ASSET_JOB", "assetSelection": [{"path": ["tables", "customer_spend"]}]}
    quality = {"jobName": "__ASSET_JOB", "assetSelection": [{"path": ["kafka", "customers"]}]}

    assert _pipeline_of(deploy, pipelines) == "customers"
    assert _pipeline_of(from_ui, pipelines) == "customer_spend"
    assert _pipeline_of(quality, pipelines) is None
    assert _pipeline_of({"jobName": "promote_version", "assetSelection": []}, pipelines) is None
