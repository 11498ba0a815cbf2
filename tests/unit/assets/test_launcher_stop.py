"""Stopping a deployment's process: the exit code tells a clean stop from a kill."""

from __future__ import annotations

import signal
import subprocess
import sys

from assets.own_process import stop_process_tree

# Prints once its SIGINT handler is installed, so the test never signals it too early.
_CLEAN = """
import signal, sys, threading
stop = threading.Event()
signal.signal(signal.SIGINT, lambda *_: stop.set())
print("ready", flush=True)
stop.wait(60)
sys.exit(0)
"""
_DEAF = """
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(60)
"""


def _started(code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def test_a_job_that_stops_on_sigint_exits_zero():
    assert stop_process_tree(_started(_CLEAN), timeout_s=30) == 0


def test_a_job_that_ignores_sigint_is_killed_and_says_so():
    assert stop_process_tree(_started(_DEAF), timeout_s=1) == -signal.SIGKILL
