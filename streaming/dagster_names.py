"""The names Dagster knows the platform by: asset key paths, job and op names, run tags.

Plain strings and no Dagster import: ``assets`` declares the Dagster objects by these names and
``kappa`` asks Dagster about them over GraphQL, and neither imports the other.
"""

from __future__ import annotations

TABLES = "tables"  # asset key prefix (and group) of the pipelines' tables
TOPICS = "kafka"  # asset key prefix (and group) of the topics

PIPELINE_TAG = "kappa/pipeline"
VERSION_TAG = "kappa/version"
FINGERPRINT_TAG = "kappa/fingerprint"
ROLE_TAG = "kappa/role"
REASON_TAG = "kappa/reason"
LIVE_TAG = "kappa/live"
# What a run is: a streaming deployment, which runs as long as its query and is never queued
# behind a limit it could not free, or a batch job (comparisons, promotions, quality suites,
# retiring), of which the instance runs a few at a time (platform/dagster.yaml).
KIND_TAG = "kappa/kind"
# On a run the run host executes (assets.run_host): the pid of that host.
RUN_HOST_TAG = "kappa/run_host"
DEPLOYMENT_KIND = "deployment"
BATCH_KIND = "batch"
PARTITION_TAG = "dagster/partition"  # Dagster's own tag: the partition (here: version) of a run

PROMOTE_JOB = "promote_version"
PROMOTE_OP = "compare_and_promote"


def table_key_path(pipeline: str) -> list[str]:
    return [TABLES, pipeline]


def topic_key_path(topic: str) -> list[str]:
    return [TOPICS, topic]


def versions_partitions_name(pipeline: str) -> str:
    """The dynamic partitions of a table asset: one partition per version of the pipeline."""
    return f"{pipeline}_versions"


def quality_job_name(pipeline: str) -> str:
    """The check-only job that runs a table's quality suite on one version."""
    return f"quality_{pipeline}"


def deploy_job_name(pipeline: str) -> str:
    """The Dagster job that runs a pipeline's streaming deployments."""
    return f"deploy_{pipeline}"


def deploy_op_name(pipeline: str) -> str:
    """The op (step) of a table's asset: where its launch config goes in a run config."""
    return "__".join(table_key_path(pipeline))
