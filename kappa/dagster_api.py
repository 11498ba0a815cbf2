"""Talking to the running Dagster instance over its GraphQL API (what the UI uses too)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from kappa.errors import DagsterApiError
from streaming.settings import Settings

ACTIVE_STATUSES = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED")

_RUNS = """
query Runs($filter: RunsFilter, $limit: Int) {
  runsOrError(filter: $filter, limit: $limit) {
    __typename
    ... on Runs {
      results {
        runId status jobName tags { key value } startTime endTime assetSelection { path }
      }
    }
    ... on PythonError { message }
  }
}
"""

_TERMINATE = """
mutation Terminate($runIds: [String!]!) {
  terminateRuns(runIds: $runIds) {
    __typename
    ... on TerminateRunsResult {
      terminateRunResults { __typename ... on PythonError { message } }
    }
  }
}
"""


_ADD_PARTITION = """
mutation Add($partitions: String!, $key: String!, $repo: RepositorySelector!) {
  addDynamicPartition(
    partitionsDefName: $partitions, partitionKey: $key, repositorySelector: $repo
  ) {
    __typename
    ... on PythonError { message }
    ... on UnauthorizedError { message }
  }
}
"""

_REPOSITORY = (
    "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"
)


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    status: str
    job_name: str
    tags: dict[str, str]
    start_time: float | None
    end_time: float | None
    assets: tuple[tuple[str, ...], ...] = ()  # the asset keys the run materializes


class DagsterApi:
    def __init__(self, settings: Settings, timeout_s: float = 10.0) -> None:
        self.url = f"http://{settings.dagster.host}:{settings.dagster.port}/graphql"
        self.timeout_s = timeout_s

    def query(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = requests.post(
                self.url,
                json={"query": document, "variables": variables or {}},
                timeout=self.timeout_s,
            )
        except requests.RequestException as exc:
            msg = (
                f"the Dagster UI at {self.url} is not reachable ({exc.__class__.__name__}); "
                "start the platform with `make run` (or `kappa up`)"
            )
            raise DagsterApiError(msg) from None
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            msg = f"Dagster GraphQL error: {body['errors'][0].get('message')}"
            raise DagsterApiError(msg)
        return body["data"]

    def runs(self, statuses: tuple[str, ...] | None = None, limit: int = 100) -> list[RunInfo]:
        run_filter = {"statuses": list(statuses)} if statuses else {}
        data = self.query(_RUNS, {"filter": run_filter, "limit": limit})["runsOrError"]
        if data["__typename"] != "Runs":
            msg = f"Dagster could not list runs: {data.get('message')}"
            raise DagsterApiError(msg)
        return [
            RunInfo(
                run_id=r["runId"],
                status=r["status"],
                job_name=r["jobName"],
                tags={t["key"]: t["value"] for t in r["tags"]},
                start_time=r.get("startTime"),
                end_time=r.get("endTime"),
                assets=tuple(tuple(a["path"]) for a in r.get("assetSelection") or ()),
            )
            for r in data["results"]
        ]

    def terminate(self, run_ids: list[str]) -> None:
        if run_ids:
            self.query(_TERMINATE, {"runIds": run_ids})

    def active_runs(self) -> list[RunInfo]:
        return self.runs(ACTIVE_STATUSES)

    def add_partition(self, partitions: str, key: str) -> None:
        """Add ``key`` to the dynamic partitions ``partitions`` (a no-op when it exists)."""
        nodes = self.query(_REPOSITORY)["repositoriesOrError"].get("nodes") or []
        if not nodes:
            msg = f"the Dagster at {self.url} serves no code location"
            raise DagsterApiError(msg)
        repo = {
            "repositoryName": nodes[0]["name"],
            "repositoryLocationName": nodes[0]["location"]["name"],
        }
        variables = {"partitions": partitions, "key": key, "repo": repo}
        result = self.query(_ADD_PARTITION, variables)["addDynamicPartition"]
        if result["__typename"] not in (
            "AddDynamicPartitionSuccess",
            "DuplicateDynamicPartitionError",
        ):
            msg = (
                f"Dagster could not add partition {key!r} to {partitions}: {result.get('message')}"
            )
            raise DagsterApiError(msg)
