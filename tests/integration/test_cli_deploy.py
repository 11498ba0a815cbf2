"""`kappa deploy` launches a deployment as the UI does; `kappa stop` stops it (real dagster dev)."""

from __future__ import annotations

import pytest

from bench.support.producing import customer_changes, send
from bench.support.reference import customers_state, replay
from streaming.deployment import Deployment
from streaming.settings import Settings
from streaming.wait import wait_until
from tests.integration.dagster_platform import running_platform
from tests.integration.helpers import kappa, table_rows
from tests.support.report_table import table_with

pytestmark = [pytest.mark.integration, pytest.mark.slow]


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


def test_deploy_then_stop(tmp_path, shared_broker):
    with running_platform(tmp_path / "home", shared_broker) as platform:
        settings = platform.settings
        send(settings, customer_changes(300, seed=31))

        deployed = kappa(settings, "deploy", "customers")
        assert deployed.returncode == 0, deployed.stderr
        run_id = _run_id(deployed.stdout)
        assert wait_until(lambda: platform.holder_pid("customers") is not None, 120, 0.5)
        assert platform.status(run_id) == "STARTED"
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

        once = kappa(
            settings, "deploy", "customers", "--version", "v2", "--mode", "until_caught_up"
        )
        assert once.returncode == 0, once.stderr
        platform.wait_status(_run_id(once.stdout), {"SUCCESS"}, 180)
        assert table_rows(settings, "customers", "v2") == customers_state(log)
        assert Deployment("customers", "v2", settings.home).checkpoint_path.exists()

        unknown = kappa(settings, "deploy", "orders")
        assert unknown.returncode == 2 and "orders" in unknown.stderr
