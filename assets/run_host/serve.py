"""``python -m assets.run_host <home>``: execute the runs handed over until SIGTERM, SIGINT, a
shutdown request or the exit of the process that started it.

It listens on 127.0.0.1 (a free port) and writes its address and a fresh key to the home. Each
request is one line of JSON with the key, and gets one line back:

    {"op": "start", "run_id": ..., "resume": false}   -> {"started": true}
    {"op": "runs"}                                    -> {"pid": ..., "runs": [...]}
    {"op": "shutdown"}                                -> {"stopping": true}

A request without the right key, or one it does not know, gets ``{"error": ...}``.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import signal
import socketserver
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, EventLogEntry
from dagster._core.events import EngineEventData
from dagster._core.instance.ref import InstanceRef
from dagster._serdes.config_class import ConfigurableClassData

from assets.run_host.client import HostAddress
from assets.run_host.host import RunHost
from streaming.engine.address import new_token, remove_address, write_address
from streaming.errors import KappaError
from streaming.home import Home

log = logging.getLogger("assets.run_host")
PARENT_CHECK_S = 1.0

# Captured stdout is per process, not per thread: the host's runs capture none.
NO_COMPUTE_LOGS = {
    "compute_logs": {
        "module": "dagster._core.storage.noop_compute_log_manager",
        "class": "NoOpComputeLogManager",
    },
}


class HostInstance(DagsterInstance):
    """The Dagster instance of the host's runs: without the yaml-defined Python log handlers.

    Dagster builds those for every run with ``logging.config.dictConfig``, which, holding the
    logging module's lock, closes every handler of the process, the other runs' too, and so
    deadlocks against a run thread that logs meanwhile. ``platform/dagster.yaml`` configures
    none (no ``python_logs``); a host asked for some refuses to start, and its runs get a
    process each instead.
    """

    def get_yaml_python_handlers(self) -> list[logging.Handler]:
        return []

    def should_store_event(self, event: EventLogEntry) -> bool:
        """Not the failure of a run already marked canceled (``kappa up``'s Ctrl-C marks runs
        whose steps are slow to stop): its step ends by raising, which Dagster reports as a
        failure over the canceled status. A run's own process would have been killed instead;
        here its end becomes an engine event and the run stays CANCELED."""
        if not super().should_store_event(event):
            return False
        dagster_event = event.dagster_event
        if dagster_event is None or dagster_event.event_type != DagsterEventType.RUN_FAILURE:
            return True
        run = self.get_run_by_id(event.run_id)
        if run is None or run.status != DagsterRunStatus.CANCELED:
            return True
        self.report_engine_event(
            f"The run had been marked canceled; its step ended after that: {event.message}",
            run,
            EngineEventData.in_process(os.getpid()),
        )
        return False


def host_instance() -> DagsterInstance:
    """The Dagster instance of ``DAGSTER_HOME``, capturing no stdout."""
    ref = InstanceRef.from_dir(os.environ["DAGSTER_HOME"], overrides=NO_COMPUTE_LOGS)
    own_class = ConfigurableClassData(__name__, HostInstance.__name__, "{}\n")
    instance = DagsterInstance.from_ref(ref._replace(custom_instance_class_data=own_class))
    if instance.get_python_log_dagster_handler_config():
        instance.dispose()
        msg = (
            "python_logs.dagster_handler_config is set in dagster.yaml: runs cannot share one "
            "process with such handlers; set dagster.run_host to false (KAPPA_RUN_HOST=false)"
        )
        raise KappaError(msg)
    return instance


class _Handler(socketserver.StreamRequestHandler):
    server: HostServer

    def handle(self) -> None:
        try:
            request = json.loads(self.rfile.readline() or b"null")
            answer = self.server.answer(request if isinstance(request, dict) else {})
        except ValueError as exc:
            answer = {"error": f"not a JSON request: {exc}"}
        self.wfile.write(json.dumps(answer).encode() + b"\n")


class HostServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: RunHost, token: str, stop: threading.Event) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.host, self.token, self.stop = host, token, stop

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if not hmac.compare_digest(str(request.get("token", "")), self.token):
            return {"error": "wrong or missing key"}
        op = request.get("op")
        if op == "start" and isinstance(request.get("run_id"), str):
            return {"started": self.host.start(request["run_id"], bool(request.get("resume")))}
        if op == "runs":
            return {"pid": os.getpid(), "runs": self.host.active()}
        if op == "shutdown":
            self.stop.set()
            return {"stopping": True}
        return {"error": f"unknown request {op!r}"}


def serve(home: Home) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    instance = host_instance()
    server = HostServer(RunHost(instance), new_token(), stop)
    threading.Thread(target=server.serve_forever, name="run-host-server", daemon=True).start()
    host, port = server.server_address[:2]
    address = HostAddress(str(host), int(port), os.getpid(), server.token, time.time())
    write_address(home.run_host_address, address)
    log.info("run host ready on %s:%d (pid %d)", host, port, os.getpid())
    launcher = os.getppid()
    try:
        # The launcher that started it is Dagster's webserver or daemon: when that exits (the
        # platform stops), so does the host.
        while not stop.wait(PARENT_CHECK_S):
            if os.getppid() != launcher:
                log.info("its launcher (pid %d) exited", launcher)
                break
    finally:
        remove_address(home.run_host_address, os.getpid())
        left = server.host.active()
        if left:  # their runs are resumed by Dagster's run monitoring in the next host
            log.warning("stopping with runs still executing: %s", ", ".join(left))
        server.shutdown()
        instance.dispose()
        log.info("run host stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m assets.run_host <platform home>", file=sys.stderr)
        return 2
    try:
        return serve(Home(Path(args[0])))
    except KappaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
