"""The publisher host: one process per executor (per worker daemon) publishes the state
partitions' shares of every Python worker of that executor, exactly once, and leaves with its
executor. The executor here is a stand-in process; the hosts, the broker and the transactions
are real."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import psutil
import pytest

from streaming.kafka.admin import ensure_topics
from streaming.processes import pid_alive
from streaming.run import publisher_host
from streaming.run.partition_share import Share
from streaming.settings import REPO_ROOT, Settings
from streaming.wait import wait_until
from tests.integration.helpers import committed_records, in_other_process, published_once

pytestmark = pytest.mark.integration

TOPIC, DEPLOYMENT, ROWS = "host_published", "host_test__v1", 25

# Another Python worker of the same executor: hands the pickled share to the executor's host.
OTHER_WORKER = textwrap.dedent(
    """
    import pickle, sys

    from streaming.run import publisher_host

    from tests.integration.test_publisher_host import records

    share, owner = pickle.loads(sys.stdin.buffer.read())
    print(publisher_host.publish(share, lambda: records(share.batch_id), owner))
    """
)


@pytest.fixture
def executor() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for an executor's worker daemon: it runs until its stdin closes."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def share(settings: Settings, batch: int) -> Share:
    """Batch ``batch``'s share of partition 0, with ids of this test's own."""
    tag = hashlib.sha256(str(settings.home).encode()).hexdigest()[:12]
    return Share(
        client=settings.kafka.client_config(),
        transactional_id=f"kappa-test-{tag}-{TOPIC}-p0",
        group=f"kappa-test-{tag}-p0",
        topic=TOPIC,
        deployment=DEPLOYMENT,
        batch_id=batch,
        live_since=None,
    )


def records(batch: int) -> list[tuple[str, bytes]]:
    return [(f"b{batch}-{i}", f'{{"n": {i}}}'.encode()) for i in range(ROWS)]


def publish(settings: Settings, batch: int, owner: int) -> int:
    """Publish batch ``batch`` from this process, a worker of ``owner``'s executor."""
    return publisher_host.publish(share(settings, batch), lambda: records(batch), owner)


def from_other_worker(settings: Settings, request: Share, owner: int) -> int:
    return int(in_other_process(settings, OTHER_WORKER, (request, owner)))


def committed(settings: Settings, expected: dict[int, int]) -> dict[int, int]:
    """Per batch, what read_committed readers see, once it is ``expected`` (or after 30 s)."""
    return published_once(committed_records(settings, TOPIC, DEPLOYMENT, expected), DEPLOYMENT)


def test_one_host_serves_every_worker_of_its_executor_and_leaves_with_it(
    settings, broker, executor
):
    ensure_topics(settings, [TOPIC])
    owner = executor.pid
    assert publish(settings, 0, owner) == ROWS
    host = publisher_host.host_pid(owner)
    assert host is not None and host != os.getpid()
    assert from_other_worker(settings, share(settings, 1), owner) == ROWS
    assert publish(settings, 2, owner) == ROWS
    # A batch handed over again (its task was retried) is not sent twice.
    assert from_other_worker(settings, share(settings, 1), owner) == 0
    assert publisher_host.host_pid(owner) == host
    assert committed(settings, {0: ROWS, 1: ROWS, 2: ROWS}) == {0: ROWS, 1: ROWS, 2: ROWS}

    assert executor.stdin is not None
    executor.stdin.close()
    executor.wait(timeout=30)
    assert wait_until(lambda: not pid_alive(host), 30), "the host outlived its executor"
    assert not publisher_host.socket_path(owner).exists()


def test_hosts_started_at_once_for_one_executor_leave_one(settings, broker, executor):
    owner = executor.pid
    start = f"from streaming.run import publisher_host; publisher_host.prepare({owner})"
    starters = [
        subprocess.Popen([sys.executable, "-c", start], cwd=REPO_ROOT) for _ in range(3)
    ]  # three workers that found no host at once
    assert [starter.wait(timeout=60) for starter in starters] == [0, 0, 0]
    ensure_topics(settings, [TOPIC])
    assert publish(settings, 0, owner) == ROWS

    def hosts() -> list[int]:
        return [
            process.pid
            for process in psutil.process_iter(["cmdline"])
            if process.info["cmdline"]
            and "streaming.run.publisher_host" in process.info["cmdline"]
            and str(owner) in process.info["cmdline"]
        ]

    assert wait_until(lambda: len(hosts()) == 1, 30), hosts()
    assert hosts() == [publisher_host.host_pid(owner)]


def test_a_killed_host_is_replaced_and_nothing_is_sent_twice(settings, broker, executor):
    ensure_topics(settings, [TOPIC])
    owner = executor.pid
    assert publish(settings, 0, owner) == ROWS
    first = publisher_host.host_pid(owner)
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert wait_until(lambda: not pid_alive(first), 30)

    # The next request starts a new host on the dead one's socket path.
    assert publish(settings, 0, owner) == 0
    assert publish(settings, 1, owner) == ROWS
    second = publisher_host.host_pid(owner)
    assert second not in (None, first)
    assert committed(settings, {0: ROWS, 1: ROWS}) == {0: ROWS, 1: ROWS}


def test_a_stopped_host_cleans_up_and_a_new_one_sweeps_what_killed_ones_left(
    settings, broker, executor
):
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(gone.stdout)  # an executor that is no more, whose host was killed outright
    leftovers = [
        publisher_host.socket_path(dead).with_suffix(s) for s in (".sock", ".lock", ".log")
    ]
    for leftover in leftovers:
        leftover.write_bytes(b"")

    ensure_topics(settings, [TOPIC])
    owner = executor.pid
    assert publish(settings, 0, owner) == ROWS
    assert not any(leftover.exists() for leftover in leftovers)

    host = publisher_host.host_pid(owner)
    assert host is not None
    os.kill(host, signal.SIGTERM)
    assert wait_until(lambda: not pid_alive(host), 30)
    assert not publisher_host.socket_path(owner).exists()


def test_the_hosts_directory_must_be_private(tmp_path, monkeypatch):
    monkeypatch.setattr(publisher_host.tempfile, "gettempdir", lambda: str(tmp_path))
    shared = tmp_path / f"kappa-publishers-{os.getuid()}"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.raises(publisher_host.HostError, match="chmod 700"):
        publisher_host.host_dir()
    shared.chmod(0o700)
    assert publisher_host.host_dir() == shared
