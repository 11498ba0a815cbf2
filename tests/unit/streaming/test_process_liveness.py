"""A process counts as gone only once every one of its threads has exited.

A multi-threaded server (a JVM such as the Kafka broker) whose main thread exits first shows as a
zombie while its other threads still run and hold its sockets; a restart right after would find its
port taken.
"""

from __future__ import annotations

import subprocess
import sys

from streaming.processes import pid_alive
from streaming.wait import wait_until

# The main thread ends with pthread_exit (ctypes releases the GIL for the call) while another
# thread goes on for a while, as a Go or JVM process's threads do while it shuts down.
_LEADER_EXITS_FIRST = (
    "import ctypes, os, threading, time\n"
    "threading.Thread(target=lambda: (time.sleep(2.0), os._exit(0))).start()\n"
    "ctypes.CDLL(None).pthread_exit(None)\n"
)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][0]


def test_a_zombie_leader_with_running_threads_is_alive_until_they_end():
    proc = subprocess.Popen([sys.executable, "-c", _LEADER_EXITS_FIRST])
    try:
        assert wait_until(lambda: _state(proc.pid) == "Z", 10, 0.01), "the main thread never ended"
        assert pid_alive(proc.pid)  # its other thread still runs
        assert wait_until(lambda: not pid_alive(proc.pid), 10, 0.05)
    finally:
        proc.kill()
        proc.wait()
