"""The streaming job as a separate process, as it runs in production, for both halves of bench/.

:class:`StreamingJob` starts ``python -m streaming run ...`` in its own process group, stops it
gracefully or kills the group (the fault harness); :class:`MeasuredJob` also samples the resident
memory of its whole tree (Python driver, Spark JVM, Python workers) and its wall time (perf).
:class:`CommitWatcher` polls a table's Delta log and notes when each commit became visible.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import psutil

from streaming.delta.commit_info import parse_commit
from streaming.delta.log_entries import log_name, parse_entry
from streaming.processes import ManagedProcess, wait_gone
from streaming.settings import REPO_ROOT


def tree_rss(root: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (shared pages counted per process)."""
    total = 0
    for proc in [root, *root.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total


class PeakRss(threading.Thread):
    """Samples a process tree's RSS every ``interval_s`` until stopped; keeps the peak."""

    def __init__(self, pid: int, interval_s: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.interval_s = interval_s
        self.peak = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                self.peak = max(self.peak, tree_rss(self.root))
            except psutil.Error:
                return
            self._stop_event.wait(self.interval_s)

    def stop(self) -> int:
        self._stop_event.set()
        self.join(timeout=5)
        return self.peak


class StreamingJob:
    """``python -m streaming run ARGS`` in its own process group, started again after each stop.

    Each start (an incarnation) logs to its own file, ``LOGS/NAME-NNN.log``. A graceful stop
    signals only the Python driver: a SIGTERM to the whole group would also reach the JVM, whose
    shutdown hook stops Spark under the running query (exit code 1). A kill is a SIGKILL of the
    whole group (driver, JVM, Python workers).
    """

    def __init__(
        self, env: Mapping[str, str], args: Sequence[str], logs: Path, name: str = "stream"
    ) -> None:
        self.env = {**os.environ, **env}
        self.args = list(args)
        self.logs = logs
        self.name = name
        self.proc: subprocess.Popen[bytes] | None = None
        self.incarnation = 0
        self.started_at = 0.0  # time.monotonic() of the last start

    @property
    def log_file(self) -> Path:
        return self.logs / f"{self.name}-{self.incarnation:03d}.log"

    def start(self) -> Self:
        assert not self.alive(), "the streaming process is already running"
        self.incarnation += 1
        argv = [sys.executable, "-m", "streaming", "run", *self.args]
        started = ManagedProcess(self.name, argv, self.log_file, self.env, REPO_ROOT).start()
        self.proc = started.proc
        self.started_at = time.monotonic()
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def wait_exit(self, timeout_s: float) -> int | None:
        """The exit code, or None if the process is still running after ``timeout_s``."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self) -> None:
        """SIGTERM to the driver: the query stops at the next batch boundary."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGTERM)

    def freeze(self) -> None:
        """SIGSTOP the whole process group: every thread stops where it is, at once."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGCONT)

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
        return len(wait_gone(tree, 10))

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """A graceful stop; SIGKILL if it does not end within ``timeout_s``. The exit code."""
        if self.proc is None:
            return None
        if self.alive():
            self.terminate()
            if self.wait_exit(timeout_s) is None:
                self.kill()
        with contextlib.suppress(ProcessLookupError):  # stray workers of a finished run
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode

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


class MeasuredJob(StreamingJob):
    """A streaming job whose wall time and peak process-tree RSS the benchmark measures.

    Unlike :meth:`StreamingJob.stop`, a stop or wait that times out kills the job and raises.
    """

    wall_s = 0.0
    peak_rss = 0
    _rss: PeakRss | None = None

    def start(self) -> Self:
        super().start()
        assert self.proc is not None
        self._rss = PeakRss(self.proc.pid)
        self._rss.start()
        return self

    def wait(self, timeout_s: float) -> int:
        assert self.proc is not None and self._rss is not None
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        finally:
            self.wall_s = time.monotonic() - self.started_at
            self.peak_rss = self._rss.stop()

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM to the driver (a stop at the next batch boundary), then wait for the exit."""
        self.terminate()
        return self.wait(timeout_s)

    def events(self) -> list[dict[str, Any]]:
        """The JSON lines the job's reporter printed."""
        found = []
        for line in self.log_file.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    found.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return found

    def finished(self) -> dict[str, Any]:
        done = [e for e in self.events() if e.get("event") == "finished"]
        if not done:
            tail = self.log_file.read_text(errors="replace")[-2000:]
            msg = f"the streaming job did not finish (exit {self.returncode}):\n{tail}"
            raise RuntimeError(msg)
        return done[-1]


def commit_info(table: Path, version: int) -> dict[str, Any] | None:
    """The commit info of a table's ``version``, read from that version's own log file (Delta
    publishes each whole); None while it is not published."""
    try:
        content = (table / log_name(version)).read_bytes()
    except FileNotFoundError:
        return None
    return next((a["commitInfo"] for a in parse_entry(content) if "commitInfo" in a), {})


@dataclass(frozen=True)
class SeenCommit:
    version: int
    seen_at: float  # time.time() when the poller first saw it
    end_offsets: dict[int, int]  # partition -> end offset of the customers topic


class CommitWatcher(threading.Thread):
    """Polls a Delta table every ``interval_s`` and records when each commit became visible."""

    def __init__(self, path: Path, topic: str, interval_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.topic = topic
        self.interval_s = interval_s
        self.commits: list[SeenCommit] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        # Each log entry is read from its own file, whose name is its version: DeltaTable's
        # history numbers entries from the version the object was loaded at, which is off by
        # the commits that land meanwhile. Entries are published whole (put-if-absent), and one
        # open of the next entry per poll takes less CPU from the measured job than an update.
        seen = -1
        while not self._stop_event.wait(self.interval_s):
            while (info := self._commit_info(seen + 1)) is not None:
                seen += 1
                commit = parse_commit({**info, "version": seen})
                if commit is not None:
                    ends = commit.end_offsets.get(self.topic, {})
                    self.commits.append(SeenCommit(seen, time.time(), ends))

    def _commit_info(self, version: int) -> dict[str, Any] | None:
        return commit_info(self.path, version)

    def covered(self, ends: dict[int, int]) -> bool:
        """Whether a visible commit covers the topic up to ``ends``."""
        return any(
            all(c.end_offsets.get(p, 0) >= e for p, e in ends.items()) for c in self.commits[-3:]
        )

    def stop(self) -> list[SeenCommit]:
        self._stop_event.set()
        self.join(timeout=5)
        return sorted(self.commits, key=lambda c: c.version)
