"""The publisher host: one process per executor that keeps the state partitions' transactional
producers open between batches, whichever of the executor's Python workers runs a partition.

Spark hands a task the idle Python worker that has waited longest, so the batches of one state
partition run in turn in different worker processes. A partition's transactional producer opened
in one of them fences the one another left open (one ``transactional.id`` per partition is what
keeps a zombie task from publishing), so every batch paid for a fresh producer
(``init_transactions`` and its group lookups). A task's worker now encodes its partition's
records and streams them, in chunks, to its executor's host over a Unix socket, and the host
sends them in the partition's transaction as they come, one share at a time per partition:

1. the worker sends the share (partition, batch, live switch);
2. the host answers ``skip`` when the partition's position says the batch went out, else
   ``send``;
3. the worker sends its records, ``CHUNK_RECORDS`` at a time, then None;
4. the host answers with the count sent, or ``retry`` when its producer turned out to be fenced
   (the partition was published from another executor since): the producer is replaced and the
   worker starts again from 1, once.

A host serves the workers of one worker daemon (their parent process: one per executor) and
exits when that process is gone. Its socket is in a directory only its user can enter. A task
that publishes starts its executor's host, if none answers, before it computes, and waits for
the socket when it publishes. A host holds a file lock for life, so of two started at once
(two workers found none) one serves and the other leaves.

Exactly once does not depend on the host: each request carries its batch and live switch, and
the host checks the partition's published position before sending. A task retried after its
worker died finds its batch published (the host finished it) or not; a host that dies takes its
open transaction with it, and the next host's producer aborts it when it opens.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

from streaming.errors import RunError
from streaming.kafka.transactions import TransactionError
from streaming.run.changelog_records import Outgoing
from streaming.run.partition_share import Share, close_writers, forget_writer
from streaming.wait import wait_until

START_TIMEOUT_S = 60.0
CHUNK_RECORDS = 10_000  # a share's records go over in chunks: neither side holds all at once
OWNER_CHECK_S = 1.0  # how often a host looks whether its owner still runs


class HostError(RunError):
    """The publisher host could not be reached, or its request failed."""


def publish(
    share: Share, records: Callable[[], Iterable[Outgoing]], owner: int | None = None
) -> int:
    """Have the host of ``owner`` (default: this worker's daemon, its parent process) send
    ``share`` with ``records()``, once; starts the host if none answers. Returns how many
    records were sent (0 when the batch had been). Raises HostError with the host's message."""
    owner = os.getppid() if owner is None else owner
    status, value = _request(share, records, owner)
    if status == "retry":  # the host replaced a fenced producer: once more, from the start
        status, value = _request(share, records, owner)
    if status == "skip":
        return 0
    if status != "ok":
        raise HostError(value)
    return value


def _request(
    share: Share, records: Callable[[], Iterable[Outgoing]], owner: int
) -> tuple[str, Any]:
    """Steps 1-4 of the protocol (module docstring); the host's last answer."""
    try:
        with _connect(owner) as connection:
            connection.send(share)
            status, value = connection.recv()
            if status == "send":
                for chunk in _chunks(records(), CHUNK_RECORDS):
                    connection.send(chunk)
                connection.send(None)
                status, value = connection.recv()
    except (EOFError, OSError) as exc:
        msg = f"the publisher host of process {owner} went away during a request: {exc}"
        raise HostError(msg) from None
    return status, value


def host_pid(owner: int) -> int | None:
    """The pid of ``owner``'s host, or None when none answers (starts none)."""
    connection = _dial(socket_path(owner))
    if connection is None:
        return None
    with connection:
        connection.send(_PING)
        return connection.recv()[1]


def socket_path(owner: int) -> Path:
    return host_dir() / f"{owner}.sock"


def host_dir() -> Path:
    """The hosts' directory: this user's, and private (the sockets take pickled requests)."""
    path = Path(tempfile.gettempdir()) / f"kappa-publishers-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        msg = f"{path} must belong to this user and be private (chmod 700), or be removed"
        raise HostError(msg)
    return path


def prepare(owner: int | None = None) -> None:
    """Start the host of ``owner`` (default: this worker's daemon) if none answers, without
    waiting for it: a task calls this before it computes, so the host's start overlaps the
    computation."""
    owner = os.getppid() if owner is None else owner
    path = socket_path(owner)
    # The socket's presence is enough here: a dead host's is found out, and replaced, when the
    # task connects to publish.
    if not path.exists():
        _start(path, owner)


def _connect(owner: int) -> Connection:
    """A connection to ``owner``'s host, started if none answers."""
    path = socket_path(owner)
    connection = _dial(path)
    if connection is not None:
        return connection
    process = _start(path, owner)
    connected: list[Connection] = []

    def answered() -> bool:
        connection = _dial(path)
        if connection is None:
            # Exit code 0: another host holds the lock and is about to answer.
            return process.poll() not in (None, 0)
        connected.append(connection)
        return True

    wait_until(answered, START_TIMEOUT_S, interval_s=0.02)
    if not connected:
        code = process.poll()
        state = "did not answer" if code is None else f"exited with code {code}"
        log = path.with_suffix(".log")
        msg = f"the publisher host for process {owner} {state}; see {log}"
        raise HostError(msg)
    return connected[0]


def _dial(path: Path) -> Connection | None:
    """A connection to the host listening on ``path``, or None when none does."""
    try:
        return Client(str(path), family="AF_UNIX")
    except (FileNotFoundError, ConnectionRefusedError):
        return None


def _start(path: Path, owner: int) -> subprocess.Popen[bytes]:
    """Start a host for ``owner``, unless this worker's last one is still starting; a host that
    finds another holding the lock exits at once."""
    with _STARTING_LOCK:
        process = _STARTING.get(owner)
        if process is not None and process.poll() is None:
            return process
        # The host keeps none of the worker's pipes open (Spark reads the worker's output until
        # it closes); what the host itself prints goes to a log beside its socket.
        with open(path.with_suffix(".log"), "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(path), str(owner)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, "MALLOC_ARENA_MAX": "2"},
            )
        _STARTING[owner] = process
        return process


# The host this worker last started, per owner (a task's threads and its publishes share it).
_STARTING: dict[int, subprocess.Popen[bytes]] = {}
_STARTING_LOCK = threading.Lock()


_PING = "ping"


def serve(path: Path, owner: int) -> None:
    """Publish the shares workers send to ``path``, one at a time per partition, until
    ``owner`` is gone or this process is asked to stop (SIGTERM)."""
    from streaming.processes import pid_alive

    stop = threading.Event()
    # Ctrl-C reaches the whole process group, this host included, while Spark lets the batch in
    # flight finish: the host serves on until its owner is gone.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    _sweep(path.parent)
    # The host holds its lock for life: a second host started for the same owner (two workers
    # found none at once) leaves, and a socket left by a dead host is safe to replace.
    held = open(path.with_suffix(".lock"), "w")  # noqa: SIM115 (held until the process ends)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return
    path.unlink(missing_ok=True)
    listener = Listener(str(path), family="AF_UNIX")
    locks: dict[str, threading.Lock] = {}
    guard = threading.Lock()

    def answer(connection: Connection) -> None:
        with connection:
            try:
                request = connection.recv()
                if request == _PING:
                    connection.send(("ok", os.getpid()))
                    return
                with guard:
                    lock = locks.setdefault(request.transactional_id, threading.Lock())
                with lock:
                    connection.send(_publish(request, connection))
            except (EOFError, OSError):
                return  # the worker went away; an open transaction was aborted

    def accept() -> None:
        while True:
            try:
                connection = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    while pid_alive(owner) and not stop.wait(OWNER_CHECK_S):
        pass
    listener.close()
    for leftover in (path, path.with_suffix(".lock")):
        leftover.unlink(missing_ok=True)
    log = path.with_suffix(".log")
    if log.exists() and log.stat().st_size == 0:
        log.unlink()


def _publish(share: Share, connection: Connection) -> tuple[str, Any]:
    """Steps 2-4 of the protocol (module docstring) for one share; the reply to send."""
    try:
        if share.sent_before():
            return ("skip", 0)
    except TransactionError as exc:
        forget_writer(share)
        return ("retry", str(exc))
    except Exception as exc:  # the worker raises it with this message
        return ("error", f"{type(exc).__name__}: {exc}")
    connection.send(("send", None))
    records = _Records(connection)
    try:
        return ("ok", share.send(records))
    except TransactionError as exc:
        records.drain()
        forget_writer(share)  # fenced, or undecided: the next attempt opens a fresh producer
        return ("retry", str(exc))
    except Exception as exc:  # the worker raises it with this message
        records.drain()
        return ("error", f"{type(exc).__name__}: {exc}")


class _Records:
    """A share's records as the worker sends them: chunks, then None."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._ended = False

    def __iter__(self) -> Iterator[Outgoing]:
        while not self._ended:
            chunk = self._connection.recv()
            if chunk is None:
                self._ended = True
            else:
                yield from chunk

    def drain(self) -> None:
        """Read the rest of a share that failed, so the worker's sends end and it hears why."""
        for _ in self:
            pass


def _chunks(records: Iterable[Outgoing], size: int) -> Iterator[list[Outgoing]]:
    iterator = iter(records)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _sweep(directory: Path) -> None:
    """Remove what hosts killed outright (their process group was) left behind."""
    from streaming.processes import pid_alive

    for leftover in directory.iterdir():
        if leftover.stem.isdigit() and not pid_alive(int(leftover.stem)):
            leftover.unlink(missing_ok=True)


def main(argv: list[str]) -> None:
    path, owner = Path(argv[0]), int(argv[1])
    try:
        serve(path, owner)
    finally:
        close_writers()


if __name__ == "__main__":
    main(sys.argv[1:])
