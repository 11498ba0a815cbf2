"""The streaming job as a separate process, as it runs in production, with its peak memory.

:class:`StreamingProcess` starts ``python -m streaming run ...`` in its own process group and
samples the resident memory of its whole tree (Python driver, Spark JVM, Python workers).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from deltalake import DeltaTable

from streaming import offsets as off
from streaming.compacted_table import END_OFFSETS

REPO = Path(__file__).resolve().parents[1]


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

    def __init__(self, pid: int, interval_s: float = 0.2) -> None:
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


@dataclass
class StreamingProcess:
    """``python -m streaming run customers ARGS`` with the bench's environment."""

    env: dict[str, str]
    args: list[str]
    log_path: Path
    started: float = 0.0
    wall_s: float = 0.0
    peak_rss: int = 0
    returncode: int | None = None
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _rss: PeakRss | None = field(default=None, repr=False)

    def start(self) -> StreamingProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self.started = time.perf_counter()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "streaming", "run", "customers", *self.args],
            cwd=REPO,
            env={**os.environ, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self._rss = PeakRss(self._proc.pid)
        self._rss.start()
        return self

    def wait(self, timeout_s: float) -> int:
        assert self._proc is not None and self._rss is not None
        try:
            self.returncode = self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._kill()
            raise
        finally:
            self.wall_s = time.perf_counter() - self.started
            self.peak_rss = self._rss.stop()
        return self.returncode

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM (a stop at the next batch boundary), then wait for the exit."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGTERM)
        return self.wait(timeout_s)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _kill(self) -> None:
        assert self._proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()

    def events(self) -> list[dict[str, Any]]:
        """The JSON lines the job's reporter printed."""
        found = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    found.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return found

    def finished(self) -> dict[str, Any]:
        done = [e for e in self.events() if e.get("event") == "finished"]
        if not done:
            tail = self.log_path.read_text(errors="replace")[-2000:]
            msg = f"the streaming job did not finish (exit {self.returncode}):\n{tail}"
            raise RuntimeError(msg)
        return done[-1]


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
        table: DeltaTable | None = None
        seen = -1
        while not self._stop_event.wait(self.interval_s):
            if table is None:
                if not DeltaTable.is_deltatable(str(self.path)):
                    continue
                table = DeltaTable(str(self.path))
            else:
                table.update_incremental()
            version = table.version()
            if version <= seen:
                continue
            now = time.time()
            for entry in table.history(version - seen if seen >= 0 else None):
                if int(entry["version"]) > seen and END_OFFSETS in entry:
                    ends = off.from_spark(json.loads(entry[END_OFFSETS])).get(self.topic, {})
                    self.commits.append(SeenCommit(int(entry["version"]), now, ends))
            seen = version

    def covered(self, ends: dict[int, int]) -> bool:
        """Whether a visible commit covers the topic up to ``ends``."""
        return any(
            all(c.end_offsets.get(p, 0) >= e for p, e in ends.items()) for c in self.commits[-3:]
        )

    def stop(self) -> list[SeenCommit]:
        self._stop_event.set()
        self.join(timeout=5)
        return sorted(self.commits, key=lambda c: c.version)
