"""`kappa up` (the README's run command): everything it started is gone after Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest
from dagster_graphql import DagsterGraphQLClient

from kappa.broker import EmbeddedBroker
from kappa.dagster_api import DagsterApi
from streaming.run.deployment import Deployment
from streaming.run.lock import DeploymentLock
from streaming.settings import REPO_ROOT
from streaming.wait import wait_until
from tests.integration.dagster_platform import _ready

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_ctrl_c_stops_runs_then_every_process(settings, tmp_path):
    env = {**os.environ, **settings.to_env()}
    out_file = tmp_path / "up.out"
    with open(out_file, "wb") as out:
        up = subprocess.Popen(
            [sys.executable, "-m", "kappa.cli", "up", "--rate", "100"],
            env=env,
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def diagnosis() -> str:
        """What `kappa up` printed and the tails of the logs of what it started."""
        parts = [f"kappa up (exit {up.poll()}):\n{out_file.read_text(errors='replace')[-3000:]}"]
        for name in ("dagster.log", "producer.log"):
            log = settings.home.logs / name
            if log.exists():
                parts.append(f"{name}:\n{log.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)

    try:
        api = DagsterApi(settings, timeout_s=5)
        assert wait_until(lambda: _ready(api) or up.poll() is not None, 120, 0.5), diagnosis()
        assert up.poll() is None, diagnosis()
        client = DagsterGraphQLClient("127.0.0.1", port_number=settings.dagster.port)
        client.submit_job_execution(
            "deploy_customers",
            run_config={"ops": {"tables__customers": {"config": {"report_every_s": 2.0}}}},
        )
        lock = DeploymentLock(Deployment("customers", "v1", settings.home).lock_path)
        assert wait_until(lambda: lock.holder() is not None, 120, 0.5), diagnosis()
        # Every part is up: Dagster, the deployment's Spark JVM, the producer.
        assert wait_until(lambda: _all_parts_running(up.pid), 60, 0.5), diagnosis()
        broker_pid = EmbeddedBroker(settings).status().pid
        assert broker_pid is not None
        tree = [psutil.Process(up.pid), *psutil.Process(up.pid).children(recursive=True)]
        tree.append(psutil.Process(broker_pid))

        up.send_signal(signal.SIGINT)
        up.wait(timeout=120)
        output = out_file.read_text(errors="replace")
        assert up.returncode == 0, diagnosis()
        assert "platform stopped" in output, diagnosis()
        _, alive = psutil.wait_procs(tree, timeout=10)
        assert alive == [], [_cmdline(p) for p in alive]
        assert lock.holder() is None
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)


def _all_parts_running(pid: int) -> bool:
    try:
        tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return False
    names = " ".join(_cmdline(p) for p in tree)
    return "dagster" in names and "java" in names and "demo produce" in names


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:  # exited (or a zombie) meanwhile
        return ""
