"""The run host's parts that need no platform (``assets.run_host``): a pipeline module changed on
disk is imported again for the next run, and the host answers only requests with its key."""

from __future__ import annotations

import importlib
import os
import sys
import threading
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance, DagsterRun, DagsterRunStatus
from dagster._core.storage.noop_compute_log_manager import NoOpComputeLogManager

from assets.run_host.client import HostAddress, RunHostClient, RunHostUnavailableError
from assets.run_host.host import RunHost, UserCode
from assets.run_host.serve import HostServer, host_instance
from streaming.engine.address import write_address
from streaming.errors import KappaError
from streaming.home import Home
from streaming.wait import wait_until


def _write(path: Path, text: str, bump_s: int = 0) -> None:
    path.write_text(text)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + bump_s * 1_000_000_000))


def test_a_module_changed_on_disk_is_imported_again_with_its_neighbours(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    package = tmp_path / "user_pipelines"
    package.mkdir()
    _write(package / "__init__.py", "")
    _write(package / "helper.py", "FACTOR = 2\n")
    _write(package / "orders.py", "from user_pipelines.helper import FACTOR\nVALUE = 1 * FACTOR\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = UserCode(roots=[tmp_path])
    try:
        assert importlib.import_module("user_pipelines.orders").VALUE == 2
        code.note()
        assert code.refresh() == []  # nothing changed: the modules stay loaded
        assert "user_pipelines.orders" in sys.modules

        _write(package / "helper.py", "FACTOR = 3\n", bump_s=5)
        assert code.refresh() == ["user_pipelines.helper"]
        # Every user module goes, so the unchanged one that imports the helper sees its change.
        assert not any(name.startswith("user_pipelines") for name in sys.modules)
        assert importlib.import_module("user_pipelines.orders").VALUE == 3
        assert "json" in sys.modules and "assets.run_host.host" in sys.modules
    finally:
        for name in [n for n in sys.modules if n.startswith("user_pipelines")]:
            del sys.modules[name]


def test_the_hosts_instance_captures_no_stdout_and_builds_no_yaml_log_handlers(
    tmp_path, monkeypatch
):  # type: ignore[no-untyped-def]
    """Dagster's per-run dictConfig of yaml handlers closes every handler of the process and
    deadlocks against a thread logging: the host's instance builds none, and refuses to start
    when dagster.yaml asks for some."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = host_instance()
    try:
        assert isinstance(instance.compute_log_manager, NoOpComputeLogManager)
        assert instance.get_yaml_python_handlers() == []
    finally:
        instance.dispose()
    (tmp_path / "dagster.yaml").write_text(
        "python_logs:\n  dagster_handler_config:\n    handlers:\n      console:\n"
        "        class: logging.StreamHandler\n"
    )
    with pytest.raises(KappaError, match=r"set dagster\.run_host to false"):
        host_instance()


def test_a_run_marked_canceled_stays_canceled_when_its_step_fails_after(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """Ctrl-C marks runs canceled whose steps are slow to stop; their hosted threads end later by
    raising, which Dagster would report as the run's failure. A run not canceled still fails."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = host_instance()
    try:
        canceled = instance.add_run(
            DagsterRun(job_name="deploy_orders", run_id="canceled", status=DagsterRunStatus.STARTED)
        )
        failing = instance.add_run(
            DagsterRun(job_name="deploy_orders", run_id="failing", status=DagsterRunStatus.STARTED)
        )
        instance.report_run_canceled(canceled, "marked canceled")
        instance.report_run_failed(instance.get_run_by_id("canceled"), "step failed")  # type: ignore[arg-type]
        instance.report_run_failed(failing, "step failed")

        assert instance.get_run_by_id("canceled").status == DagsterRunStatus.CANCELED  # type: ignore[union-attr]
        assert instance.get_run_by_id("failing").status == DagsterRunStatus.FAILURE  # type: ignore[union-attr]
        types = [
            e.dagster_event.event_type
            for e in instance.all_logs("canceled")
            if e.dagster_event is not None
        ]
        assert DagsterEventType.RUN_FAILURE not in types
        assert types[-1] == DagsterEventType.ENGINE_EVENT
    finally:
        instance.dispose()


@pytest.fixture
def served(tmp_path):  # type: ignore[no-untyped-def]
    """A host on an ephemeral instance, listening as ``python -m assets.run_host`` does."""
    stop = threading.Event()
    with DagsterInstance.ephemeral() as instance:
        server = HostServer(RunHost(instance), "the-key", stop)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        home = Home(tmp_path / "home")
        host, port = server.server_address[:2]
        write_address(home.run_host_address, HostAddress(host, port, os.getpid(), "the-key", 0.0))
        try:
            yield home, server, stop
        finally:
            server.shutdown()
            server.server_close()


def test_the_host_answers_with_its_key_and_refuses_any_other(served):  # type: ignore[no-untyped-def]
    home, server, stop = served
    client = RunHostClient(home)
    assert client.runs() == (os.getpid(), [])
    # An unknown run is taken, found unknown by its thread, and let go.
    assert client.start("no-such-run") is True
    assert wait_until(lambda: client.runs()[1] == [], timeout_s=10)

    host, port = server.server_address[:2]
    write_address(home.run_host_address, HostAddress(host, port, os.getpid(), "wrong", 0.0))
    with pytest.raises(RunHostUnavailableError, match="wrong or missing key"):
        client.runs()
    assert not stop.is_set()

    write_address(home.run_host_address, HostAddress(host, port, os.getpid(), "the-key", 0.0))
    client.shutdown()
    assert stop.is_set()


def test_no_host_is_said_plainly(tmp_path):  # type: ignore[no-untyped-def]
    with pytest.raises(RunHostUnavailableError, match="no run host runs"):
        RunHostClient(Home(tmp_path / "home")).runs()
