"""What the fault harness breaks besides the streaming job and the broker: its disk.

(The job itself, ``python -m streaming run customers`` in its own process group, killed whole
with SIGKILL, is :class:`bench.processes.StreamingJob`.)

- :class:`Disk`: a small tmpfs mounted on the platform home, which can be filled up or remounted
  read-only (needs CAP_SYS_ADMIN; without it a permission flip is the fallback for non-root users).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path


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
