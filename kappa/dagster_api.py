"""Talking to the running Dagster instance over its GraphQL API (what the UI uses too)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import requests

from kappa.errors import DagsterApiError
from streaming.settings import Settings

ACTIVE_STATUSES = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED")
# How long a termination waits for a run whose process is still loading the code (Dagster cannot
# terminate a STARTING run; its deployment may already run in the engine) before it marks the run
# canceled instead: the run's process then never runs its step, and the engine stops the
# deployment no step takes over (assets/run_launcher.py).
STARTING_WAIT_S = 60.0

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
mutation Terminate($runIds: [String!]!, $policy: TerminateRunPolicy) {
  terminateRuns(runIds: $runIds, terminatePolicy: $policy) {
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

    def runs(
        self,
        statuses: tuple[str, ...] | None = None,
        limit: int = 100,
        run_ids: list[str] | None = None,
    ) -> list[RunInfo]:
        run_filter: dict[str, Any] = {"statuses": list(statuses)} if statuses else {}
        if run_ids is not None:
            run_filter["runIds"] = run_ids
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

    def terminate(self, run_ids: list[str], starting_wait_s: float = STARTING_WAIT_S) -> None:
        """Terminate the runs; one still starting is terminated once it has started, or marked
        canceled after ``starting_wait_s``."""
        pending = list(run_ids)
        deadline = time.monotonic() + starting_wait_s
        while pending:
            starting = {r.run_id for r in self.runs(run_ids=pending) if r.status == "STARTING"}
            ready = [i for i in pending if i not in starting]
            if ready:
                self.query(_TERMINATE, {"runIds": ready, "policy": "SAFE_TERMINATE"})
            pending = [i for i in pending if i in starting]
            if pending and time.monotonic() >= deadline:
                self.mark_canceled(pending)
                return
            if pending:
                time.sleep(0.5)

    def mark_canceled(self, run_ids: list[str]) -> None:
        """Mark the runs CANCELED without reaching their processes (which are gone, or are
        about to be)."""
        self.query(_TERMINATE, {"runIds": run_ids, "policy": "MARK_AS_CANCELED_IMMEDIATELY"})

    def active_runs(self) -> list[RunInfo]:
        return self.runs(ACTIVE_STATUSES)

    def add_partition(self, partitions: str, key: str) -> tuple[str, str]:
        """Add ``key`` to the dynamic partitions ``partitions`` (a no-op when it exists); returns
        the code location and repository it was added in, for a launch to name them."""
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
        return repo["repositoryLocationName"], repo["repositoryName"]
