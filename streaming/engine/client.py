"""Talking to the engine: starting, watching and stopping deployments in it.

:class:`EngineClient` reads the engine's address from the platform home and speaks its HTTP
interface (``streaming.engine.server``). :func:`ensure_engine` returns a client of the running
engine, starting one (``python -m streaming engine``, detached, in its own process group) when
none answers, so a deployment launched while the engine is down brings it back.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from streaming.engine.address import EngineAddress, read_address
from streaming.errors import RunError
from streaming.home import Home
from streaming.processes import ManagedProcess, pid_alive
from streaming.settings import REPO_ROOT, Settings
from streaming.wait import wait_until


class EngineUnavailableError(RunError):
    """No engine answers for this platform home."""


class EngineRefusedError(RunError):
    """The engine refused a request; the message says why."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class EngineClient:
    def __init__(self, home: Home, timeout_s: float = 10.0) -> None:
        self.home = home
        self.timeout_s = timeout_s

    def address(self) -> EngineAddress:
        address = read_address(self.home.engine_address, EngineAddress)
        if address is None:
            msg = f"no engine runs for {self.home} (start the platform: kappa up)"
            raise EngineUnavailableError(msg)
        return address

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, wait_s: float = 0.0
    ) -> Any:
        address = self.address()
        timeout_s = self.timeout_s + wait_s
        connection = http.client.HTTPConnection(address.host, address.port, timeout=timeout_s)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {address.token}", "Content-Type": "application/json"}
        try:
            connection.request(method, "/v1" + path, body=data, headers=headers)
            response = connection.getresponse()
            payload = json.loads(response.read() or b"null")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            msg = f"the engine at {address.url} does not answer: {exc}"
            raise EngineUnavailableError(msg) from None
        finally:
            connection.close()
        if response.status != 200:
            error = payload.get("error") if isinstance(payload, dict) else str(payload)
            raise EngineRefusedError(str(error), response.status)
        return payload

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")

    def answers(self) -> bool:
        try:
            self.health()
        except EngineUnavailableError:
            return False
        return True

    def deployments(self) -> list[dict[str, Any]]:
        return self._call("GET", "/deployments")

    def submit(
        self,
        pipeline: str,
        version: str,
        options: dict[str, Any],
        run_id: str | None,
        claim_within_s: float | None = None,
    ) -> dict[str, Any]:
        """Start a deployment for ``run_id`` (or get the one running for it back). With
        ``claim_within_s``, it is started ahead of the run's step, which must take it over with
        a submit of its own within that many seconds or the engine stops it."""
        body = {"pipeline": pipeline, "version": version, "options": options, "run_id": run_id}
        if claim_within_s is not None:
            body["claim_within_s"] = claim_within_s
        return self._call("POST", "/deployments", body)

    def deployment(self, deployment_id: str, since: int = 0, wait_s: float = 0.0) -> dict[str, Any]:
        """The deployment and its reports numbered ``since`` and later (``events``; ``next``:
        the number to ask for next). With ``wait_s``, the engine answers as soon as there is a
        report or a change of state, or after that many seconds (30 at most)."""
        query = f"since={since}" + (f"&wait_s={wait_s:g}" if wait_s > 0 else "")
        return self._call("GET", f"/deployments/{deployment_id}?{query}", wait_s=wait_s)

    def validate(self, pipeline: str, version: str) -> dict[str, Any]:
        """Run the pipeline's quality suite on the version's snapshot in the engine; the path
        of the saved result, its deployment and whether it passed. Waits for the suite, so call
        it on a client with a timeout long enough for one."""
        return self._call("POST", f"/quality/{pipeline}/{version}")

    def stop(self, deployment_id: str) -> dict[str, Any]:
        return self._call("POST", f"/deployments/{deployment_id}/stop")

    def shutdown(self) -> None:
        self._call("POST", "/shutdown")


@contextmanager
def _starting(home: Home) -> Iterator[None]:
    home.engine_lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(home.engine_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def start_engine_process(settings: Settings) -> subprocess.Popen[bytes]:
    """``python -m streaming engine`` in its own process group, its output in its log."""
    env = {**os.environ, **settings.to_env(), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "streaming", "engine"]
    started = ManagedProcess("engine", argv, settings.home.log("engine"), env, REPO_ROOT).start()
    assert started.proc is not None
    return started.proc


def ensure_engine(settings: Settings, timeout_s: float = 180.0) -> EngineClient:
    """A client of the engine of ``settings.home``, starting the engine if none answers (or,
    for an engine started outside the platform, ``engine.external``, waiting for it).

    Raises:
        EngineUnavailableError: the engine did not answer within ``timeout_s`` (its log says
            why).
    """
    client = EngineClient(settings.home)
    if client.answers():
        return client
    if settings.engine.external:
        if not wait_until(client.answers, timeout_s, interval_s=1.0):
            msg = (
                f"the engine did not answer within {timeout_s:.0f} s; it is started outside the "
                "platform (engine.external): check its SparkApplication (kubectl -n kappa get "
                "sparkapplication kappa-engine)"
            )
            raise EngineUnavailableError(msg)
        return client
    with _starting(settings.home):
        if client.answers():  # another client started it while this one waited
            return client
        process = start_engine_process(settings)
        ready = wait_until(
            lambda: process.poll() is not None or client.answers(), timeout_s, interval_s=0.2
        )
    if not ready or process.poll() is not None:
        msg = (
            f"the engine did not start (exit code {process.poll()}); see "
            f"{settings.home.log('engine')}"
        )
        raise EngineUnavailableError(msg)
    return client


def stop_engine(home: Home, timeout_s: float = 90.0) -> bool:
    """Stop the home's engine: every deployment at a batch boundary, then the engine; its
    process group is killed if it has not exited by ``timeout_s``. False if none was running."""
    address = read_address(home.engine_address, EngineAddress)
    if address is None or not pid_alive(address.pid):
        return False
    with contextlib.suppress(EngineUnavailableError, EngineRefusedError):
        EngineClient(home, timeout_s=5.0).shutdown()
    if not wait_until(lambda: not pid_alive(address.pid), timeout_s, interval_s=0.2):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(address.pid, signal.SIGKILL)
        wait_until(lambda: not pid_alive(address.pid), 10.0)
    return True
