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
from kappa.processes import wait_until
from kappa.settings import REPO_ROOT
from streaming.deployment import Deployment
from streaming.lock import DeploymentLock
from tests.integration.dagster_platform import _ready

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_ctrl_c_stops_runs_then_every_process(settings):
    env = {**os.environ, **settings.to_env()}
    up = subprocess.Popen(
        [sys.executable, "-m", "kappa.cli", "up", "--rate", "100"],
        env=env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        api = DagsterApi(settings, timeout_s=5)
        assert wait_until(lambda: _ready(api) or up.poll() is not None, 120, 0.5)
        assert up.poll() is None, up.stdout.read().decode() if up.stdout else ""
        client = DagsterGraphQLClient("127.0.0.1", port_number=settings.dagster.port)
        client.submit_job_execution(
            "deploy_customers",
            run_config={"ops": {"tables__customers": {"config": {"report_every_s": 2.0}}}},
        )
        lock = DeploymentLock(Deployment("customers", "v1", settings.home).lock_path)
        assert wait_until(lambda: lock.holder() is not None, 120, 0.5), "deployment not started"
        broker_pid = EmbeddedBroker(settings).status().pid
        tree = [psutil.Process(up.pid), *psutil.Process(up.pid).children(recursive=True)]
        assert broker_pid is not None
        tree.append(psutil.Process(broker_pid))
        names = " ".join(_cmdline(p) for p in tree)
        assert "dagster" in names and "java" in names and "demo produce" in names

        up.send_signal(signal.SIGINT)
        output, _ = up.communicate(timeout=120)
        assert up.returncode == 0, output.decode()[-3000:]
        assert "platform stopped" in output.decode()
        _, alive = psutil.wait_procs(tree, timeout=10)
        assert alive == [], [_cmdline(p) for p in alive]
        assert lock.holder() is None
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:  # exited (or a zombie) meanwhile
        return ""
