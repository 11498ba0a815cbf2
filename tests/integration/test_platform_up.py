"""`kappa up` (the README's run command): everything it started is gone after Ctrl-C."""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys

import psutil
import pytest
from dagster import DagsterInstance

from kappa.broker import EmbeddedBroker
from kappa.dagster_api import DagsterApi
from kappa.deploy import launch, run_config
from streaming.deployment import Deployment
from streaming.deployment.lock import DeploymentLock
from streaming.processes import wait_gone
from streaming.settings import REPO_ROOT
from streaming.wait import wait_until
from tests.integration.dagster_platform import _ready

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=50)]


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
        # As the Launchpad does: the deploy job on the version's partition.
        run_id = launch(
            settings,
            "customers",
            "v1",
            run_config("customers", {"report_every_s": 2.0}),
            {},
        )
        lock = DeploymentLock(Deployment("customers", "v1", settings.home).lock_path)
        assert wait_until(lambda: lock.holder() is not None, 120, 0.5), diagnosis()
        # Every part is up: Dagster, the deployment's Spark JVM, the producer.
        assert wait_until(lambda: _all_parts_running(up.pid), 60, 0.5), diagnosis()
        broker_pid = EmbeddedBroker(settings).status().pid
        assert broker_pid is not None

        # Every server binds to 127.0.0.1 only: Dagster, the broker, the Spark driver and its
        # block manager (the JVM), and whatever else listens.
        def java_listening() -> int:
            procs = [psutil.Process(up.pid), *psutil.Process(up.pid).children(recursive=True)]
            return sum("java" in name for _, _, name in _listening(procs))

        assert wait_until(lambda: java_listening() >= 2, 60, 0.5), diagnosis()
        tree = [psutil.Process(up.pid), *psutil.Process(up.pid).children(recursive=True)]
        tree.append(psutil.Process(broker_pid))
        listening = _listening(tree)
        assert any(settings.dagster.port == port for _, port, _ in listening), listening
        assert any(settings.broker.port == port for _, port, _ in listening), listening
        assert sum("java" in name for _, _, name in listening) >= 2, listening  # driver + blocks
        assert all(_loopback(ip) for ip, _, _ in listening), listening

        up.send_signal(signal.SIGINT)
        up.wait(timeout=120)
        output = out_file.read_text(errors="replace")
        assert up.returncode == 0, diagnosis()
        assert "platform stopped" in output, diagnosis()
        alive = wait_gone(tree, 10)
        assert alive == [], [_cmdline(p) for p in alive]
        assert lock.holder() is None
        # Dagster's own storage says the run was terminated (not just killed with its tree).
        assert _stored_status(settings, run_id) == "CANCELED", diagnosis()
    finally:
        if up.poll() is None:  # a failed check: let `kappa up` stop what it started first
            up.send_signal(signal.SIGINT)
            try:
                up.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)


def _stored_status(settings, run_id: str) -> str:  # type: ignore[no-untyped-def]
    """The run's status, read from the Dagster instance's storage after everything stopped."""
    instance = DagsterInstance.from_config(str(settings.home.dagster))
    try:
        run = instance.get_run_by_id(run_id)
        assert run is not None, f"run {run_id} is not in Dagster's storage"
        return run.status.value
    finally:
        instance.dispose()


def _loopback(address: str) -> bool:
    """127.0.0.1 itself, or as the JVM reports it on a dual-stack socket (::ffff:127.0.0.1)."""
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return str(mapped or ip) == "127.0.0.1"


def _listening(processes: list[psutil.Process]) -> list[tuple[str, int, str]]:
    """(address, port, process name) of every listening TCP socket of ``processes``."""
    found = []
    for proc in processes:
        try:
            sockets = proc.net_connections(kind="inet")
            name = proc.name()
        except psutil.Error:  # exited meanwhile
            continue
        found += [(c.laddr.ip, c.laddr.port, name) for c in sockets if c.status == "LISTEN"]
    return found


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
