"""One running copy per deployment: an exclusive file lock held for the life of the query."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from streaming.errors import RunError


class DeploymentBusyError(RunError):
    """Another process is already running this deployment."""


class DeploymentLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def holder(self) -> dict[str, Any] | None:
        """Who holds the lock (pid, run id, start time), or None when it is free."""
        if not self.path.exists():
            return None
        fd = os.open(self.path, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = self.path.read_text() or "{}"
                try:
                    return json.loads(text)
                except json.JSONDecodeError:
                    return {}
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def acquire(self, deployment: str, run_id: str | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = self.holder() or {}
            msg = (
                f"deployment {deployment} is already running (pid {holder.get('pid', '?')}, "
                f"run {holder.get('run_id') or '-'}); stop it first (kappa stop)"
            )
            raise DeploymentBusyError(msg) from None
        info = {"pid": os.getpid(), "run_id": run_id, "started_at": time.time()}
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
