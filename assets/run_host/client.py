"""Talking to the run host: handing it runs, asking which it executes, starting and stopping it.

The host listens on 127.0.0.1 and writes its address, pid and a key to the platform home
(``Home.run_host_address``, readable by its owner only). A request is one line of JSON carrying
the key, and so is the answer (``assets.run_host.serve``). :func:`ensure_host` starts a host when
none answers, so the first hosted launch brings one up, and so does the first after a host died.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import sys
from dataclasses import dataclass
from typing import Any

from streaming.engine.address import read_address
from streaming.errors import RunError
from streaming.home import Home
from streaming.processes import ManagedProcess, pid_alive
from streaming.settings import REPO_ROOT
from streaming.wait import wait_until

START_TIMEOUT_S = 60.0


class RunHostUnavailableError(RunError):
    """No run host answers for this platform home, or it refused the request."""


@dataclass(frozen=True)
class HostAddress:
    host: str
    port: int
    pid: int
    token: str
    started_at: float


class RunHostClient:
    def __init__(self, home: Home, timeout_s: float = 5.0) -> None:
        self.home = home
        self.timeout_s = timeout_s

    def address(self) -> HostAddress:
        address = read_address(self.home.run_host_address, HostAddress)
        if address is None:
            msg = f"no run host runs for {self.home}"
            raise RunHostUnavailableError(msg)
        return address

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        address = self.address()
        line = json.dumps({**request, "token": address.token}).encode() + b"\n"
        try:
            with socket.create_connection((address.host, address.port), self.timeout_s) as sock:
                sock.sendall(line)
                answer = json.loads(sock.makefile("rb").readline() or b"null")
        except (OSError, ValueError) as exc:
            msg = f"the run host (pid {address.pid}) does not answer: {exc}"
            raise RunHostUnavailableError(msg) from None
        if not isinstance(answer, dict) or "error" in answer:
            error = answer.get("error") if isinstance(answer, dict) else answer
            msg = f"the run host (pid {address.pid}) refused {request['op']}: {error}"
            raise RunHostUnavailableError(msg)
        return answer

    def start(self, run_id: str, resume: bool = False) -> bool:
        """Hand the host ``run_id`` to execute; False if it executes it already."""
        return bool(self._call({"op": "start", "run_id": run_id, "resume": resume})["started"])

    def runs(self) -> tuple[int, list[str]]:
        """The host's pid and the runs it executes."""
        answer = self._call({"op": "runs"})
        return int(answer["pid"]), list(answer["runs"])

    def answers(self) -> bool:
        try:
            self.runs()
        except RunHostUnavailableError:
            return False
        return True

    def shutdown(self) -> None:
        self._call({"op": "shutdown"})


def ensure_host(home: Home, timeout_s: float = START_TIMEOUT_S) -> RunHostClient:
    """A client of the home's run host, starting one if none answers (``python -m
    assets.run_host``, with this process's environment: ``DAGSTER_HOME`` and the settings).

    Raises:
        RunHostUnavailableError: no host answered within ``timeout_s`` (its log says why).
    """
    client = RunHostClient(home)
    if client.answers():
        return client
    home.run_host_lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(home.run_host_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if client.answers():  # another launcher started it while this one waited
            return client
        argv = [sys.executable, "-m", "assets.run_host", str(home.root)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = ManagedProcess("run-host", argv, home.log("run-host"), env, REPO_ROOT).start()
        assert process.proc is not None
        proc = process.proc
        ready = wait_until(lambda: proc.poll() is not None or client.answers(), timeout_s, 0.2)
    finally:
        os.close(fd)
    if not ready or proc.poll() is not None:
        msg = f"the run host did not start (exit code {proc.poll()}); see {home.log('run-host')}"
        raise RunHostUnavailableError(msg)
    return client


def stop_host(home: Home, timeout_s: float = 20.0) -> bool:
    """Stop the home's run host (its runs end with it: stop them first); False if none ran."""
    address = read_address(home.run_host_address, HostAddress)
    if address is None or not pid_alive(address.pid):
        return False
    with contextlib.suppress(RunHostUnavailableError):
        RunHostClient(home).shutdown()
    if not wait_until(lambda: not pid_alive(address.pid), timeout_s, interval_s=0.2):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(address.pid, signal.SIGKILL)
    return True
