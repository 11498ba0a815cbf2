"""A real `dagster dev` (webserver + daemon) on the test process's broker, for lifecycle tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dagster_graphql import DagsterGraphQLClient

from assets.run_host.client import stop_host
from bench.support.broker import delete_topics
from bench.support.settings import private_settings
from kappa.broker import EmbeddedBroker
from kappa.dagster_api import ACTIVE_STATUSES, DagsterApi
from kappa.platform_up import dagster_dev
from streaming.dagster_names import (
    PARTITION_TAG,
    deploy_job_name,
    deploy_op_name,
    versions_partitions_name,
)
from streaming.deployment import Deployment
from streaming.deployment.lock import DeploymentLock
from streaming.engine.client import stop_engine
from streaming.processes import ManagedProcess
from streaming.settings import Settings
from streaming.wait import wait_until


@dataclass
class Platform:
    settings: Settings
    dagster: ManagedProcess
    api: DagsterApi
    client: DagsterGraphQLClient

    def launch(self, pipeline: str, version: str = "v1", **config: object) -> str:
        """Run ``deploy_<pipeline>`` on the version's partition (added first, as the UI does)."""
        self.api.add_partition(versions_partitions_name(pipeline), version)
        return self.client.submit_job_execution(
            deploy_job_name(pipeline),
            run_config={"ops": {deploy_op_name(pipeline): {"config": config}}},
            tags={PARTITION_TAG: version},
        )

    def status(self, run_id: str) -> str:
        return self.client.get_run_status(run_id).value

    def wait_status(self, run_id: str, statuses: set[str], timeout_s: float) -> str:
        assert wait_until(lambda: self.status(run_id) in statuses, timeout_s, 0.5), (
            f"run {run_id} is {self.status(run_id)}, expected one of {statuses}"
        )
        return self.status(run_id)

    def holder_pid(self, pipeline: str, version: str = "v1") -> int | None:
        lock = DeploymentLock(Deployment(pipeline, version, self.settings.home).lock_path)
        holder = lock.holder()
        return int(holder["pid"]) if holder and holder.get("pid") else None


@contextmanager
def running_platform(home: Path, broker: EmbeddedBroker, **overrides: object) -> Iterator[Platform]:
    """Dagster on ``broker`` (the shared one, emptied first), with its home at ``home``.

    ``overrides``: dotted settings, e.g. ``pipelines`` for a user's pipeline modules.

    The quality sensor's own suite runs are off unless ``quality.auto`` is overridden: each is a
    run process, a Spark session and a GE validation competing with the test for the CPU, and
    only ``test_lifecycle`` checks them.
    """
    overrides.setdefault("quality.auto", False)
    ports = broker.settings.broker
    settings = private_settings(
        home, ports.port, controller_port=ports.controller_port, **overrides
    )
    delete_topics(settings.kafka.client_config())
    dagster = dagster_dev(settings).start()
    try:
        api = DagsterApi(settings, timeout_s=5)
        assert wait_until(lambda: _ready(api), timeout_s=120, interval_s=0.5), (
            settings.home.log("dagster")
        ).read_text()[-3000:]
        client = DagsterGraphQLClient("127.0.0.1", port_number=settings.dagster.port)
        yield Platform(settings, dagster, api, client)
    finally:
        try:
            api.terminate([r.run_id for r in api.active_runs()])
            ending = (*ACTIVE_STATUSES, "CANCELING")
            wait_until(lambda: not api.runs(ending), timeout_s=40, interval_s=0.5)
        except Exception:
            pass
        stop_host(settings.home)
        dagster.stop()
        # The deployments' runs started the engine: it outlives them, as under `kappa up`.
        stop_engine(settings.home)


def _ready(api: DagsterApi) -> bool:
    try:
        data = api.query(
            "{ repositoriesOrError { __typename ... on RepositoryConnection { nodes { name } } } }"
        )
        return bool(data["repositoriesOrError"].get("nodes"))
    except Exception:
        return False
