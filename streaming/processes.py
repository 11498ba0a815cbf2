"""Background processes the platform starts, each in its own process group, and their stopping.

Stopping a process stops its whole group, then any descendant that escaped into another group
(``dagster dev`` starts code servers and run workers that way), so nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from streaming.wait import wait_until


class ManagedProcess:
    """A child process with its log file; ``stop()`` ends it and all its descendants."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_file: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_file = log_file
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> ManagedProcess:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def descendants(self) -> list[psutil.Process]:
        if self.proc is None:
            return []
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 15.0) -> None:
        """Signal the group, wait, then SIGKILL whatever of the tree is left."""
        if self.proc is None:
            return
        tree = self.descendants()
        _signal_group(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        kill_all(tree, timeout_s=5.0)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def kill_all(processes: Sequence[psutil.Process], timeout_s: float = 5.0) -> None:
    """SIGTERM the processes still alive, then SIGKILL those that did not exit in time."""
    alive = [p for p in processes if is_running(p)]
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.terminate()
    still = wait_gone(alive, timeout_s)
    for proc in still:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    wait_gone(still, timeout_s)


def wait_gone(processes: Sequence[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait until none of ``processes`` is running (exited, or a zombie); those still running
    after ``timeout_s``. Polls ``is_running`` rather than ``psutil.wait_procs``, whose pidfd wait
    can raise ``FileNotFoundError`` for a process that has just exited."""
    wait_until(lambda: not any(is_running(p) for p in processes), timeout_s, interval_s=0.05)
    return [p for p in processes if is_running(p)]


def is_running(proc: psutil.Process) -> bool:
    """Alive and not a zombie."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie counts as gone once it is its only thread (a main thread
    that exits first shows as a zombie while the others still run and hold the sockets)."""
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
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                return
            time.sleep(0.05)


def port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0
