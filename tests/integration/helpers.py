"""Running pipelines and the CLI in tests, writing tables as a run would, and reading them back
as plain dicts."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
from deltalake import CommitProperties, write_deltalake

from bench.support.reference import Stamped, read_to_end, table_state
from streaming.define import Pipeline
from streaming.define.registry import get_pipeline
from streaming.delta.commit_info import BATCH_ID, END_OFFSETS
from streaming.delta.table_reader import commits, read_arrow
from streaming.deployment import Deployment
from streaming.kafka.offsets import from_spark
from streaming.run.options import RunOptions
from streaming.run.publication import BATCH_HEADER, DEPLOYMENT_HEADER
from streaming.run.reporting import Snapshot
from streaming.run.runner import PipelineRunner
from streaming.settings import CRASH_AT_ENV, REPO_ROOT, Settings
from streaming.wait import wait_until


def run_until_caught_up(
    spark: Any, settings: Settings, pipeline: str | Pipeline, **options: Any
) -> Snapshot:
    """Run a registered pipeline (by name) or a variant of one in-process until caught up."""
    if isinstance(pipeline, str):
        pipeline = get_pipeline(settings.pipelines, pipeline)
    deployment = Deployment(pipeline.name, options.pop("version", pipeline.version), settings.home)
    runner = PipelineRunner(
        spark,
        pipeline,
        deployment,
        settings,
        RunOptions(mode="until_caught_up", report_every_s=3600, **options),
    )
    return runner.run()


def table_rows(settings: Settings, name: str, version: str = "v1") -> dict[str, dict[str, Any]]:
    pipeline = get_pipeline(settings.pipelines, name)
    path = Deployment(name, version, settings.home).table_path
    return table_state(read_arrow(path).to_pylist(), pipeline.table.key)


def committed_batches(settings: Settings, name: str, version: str | None = None) -> int:
    """How many commits the version's table has (0 before it exists); by default the version
    the registered pipeline declares (the one ``python -m streaming run NAME`` runs)."""
    version = version or get_pipeline(settings.pipelines, name).version
    try:
        return len(commits(Deployment(name, version, settings.home).table_path))
    except FileNotFoundError:
        return 0


def kill_mid_run(
    settings: Settings,
    name: str,
    max_offsets: int,
    batches: int,
    timeout_s: float = 180,
    publishing_to: str | None = None,
) -> int:
    """Run the pipeline as its own process tree (`python -m streaming run`, ``max_offsets`` per
    batch), SIGKILL the driver, its JVM and its Python workers once the table has ``batches``
    commits, and return how many it had when killed.

    With ``publishing_to`` (the pipeline's published topic), the driver kills itself between a
    batch's publication and its commit (``KAPPA_CRASH_AT``), at the first batch from
    ``batches`` on that sent records to the topic.
    """
    if publishing_to is None:
        return _kill_once(settings, name, max_offsets, batches, timeout_s)
    killed_at = _crash_once(settings, name, max_offsets, batches, timeout_s)
    records = replay_published(settings, publishing_to, "read_uncommitted")
    assert any(r.batch == killed_at for r in records), (
        f"{name} died at batch {killed_at} without its records in {publishing_to!r}"
    )
    return killed_at


def _pipeline_process(
    settings: Settings, name: str, max_offsets: int, crash_at: str | None = None
) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "streaming", "run", name, "--until-caught-up"]
    env = {**os.environ, **settings.to_env()}
    if crash_at is not None:
        env[CRASH_AT_ENV] = crash_at
    return subprocess.Popen(
        [*cmd, "--max-offsets-per-trigger", str(max_offsets)],
        env=env,
        cwd=REPO_ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _stderr_tail(proc: subprocess.Popen[bytes]) -> str:
    return proc.stderr.read().decode()[-3000:] if proc.stderr else ""


def _kill_once(
    settings: Settings, name: str, max_offsets: int, batches: int, timeout_s: float
) -> int:
    proc = _pipeline_process(settings, name, max_offsets)
    try:
        assert wait_until(
            lambda: committed_batches(settings, name) >= batches or proc.poll() is not None,
            timeout_s=timeout_s,
        ), "the pipeline never committed"
        assert proc.poll() is None, _stderr_tail(proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return committed_batches(settings, name)


def _crash_once(
    settings: Settings, name: str, max_offsets: int, batches: int, timeout_s: float
) -> int:
    proc = _pipeline_process(settings, name, max_offsets, crash_at=f"published:{batches}")
    try:
        proc.wait(timeout=timeout_s)
        assert proc.returncode == -signal.SIGKILL, (
            f"{name} ended with {proc.returncode}, not at its crash point: {_stderr_tail(proc)}"
        )
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    # The driver led its group, so its JVM and Python workers died with it.
    return committed_batches(settings, name)


def kill_twice_mid_run(
    settings: Settings,
    name: str,
    max_offsets: int,
    batches: int,
    publishing_to: str | None = None,
) -> tuple[int, int]:
    """:func:`kill_mid_run` once the table has ``batches`` commits, then again (resumed from
    its checkpoint) after 3 more; the commits the table had at each kill."""
    first = kill_mid_run(settings, name, max_offsets, batches, 240, publishing_to)
    return first, kill_mid_run(settings, name, max_offsets, first + 3, 180, publishing_to)


@dataclass(frozen=True)
class PublishedRecord:
    """A record of a published topic with the headers the publisher stamps."""

    partition: int
    offset: int
    key: bytes
    value: bytes | None
    deployment: str
    batch: int


def replay_published(
    settings: Settings,
    topic: str,
    isolation: Literal["read_committed", "read_uncommitted"] = "read_committed",
) -> list[PublishedRecord]:
    """Every record of a published topic, read to the end of each partition (the last stable
    offset with ``read_committed``, the log's end with ``read_uncommitted``), by partition and
    offset (how the consumer interleaves partitions differs between two reads)."""
    config = {
        "bootstrap.servers": settings.kafka.bootstrap_servers,
        "group.id": f"published-{uuid.uuid4().hex[:12]}",
        "isolation.level": isolation,
    }
    records = []
    for msg in read_to_end(config, [topic]):
        headers = {k: v.decode() for k, v in msg.headers() or []}
        records.append(
            PublishedRecord(
                msg.partition(),
                msg.offset(),
                msg.key(),
                msg.value(),
                headers[DEPLOYMENT_HEADER],
                int(headers[BATCH_HEADER]),
            )
        )
    return sorted(records, key=lambda r: (r.partition, r.offset))


def published_once(records: list[PublishedRecord], deployment: str) -> dict[int, int]:
    """How many records each batch of ``deployment`` published, checking that no batch sent a
    key twice (a batch's changes hold a key at most once, so a repeat is a batch seen twice)."""
    sent = Counter((r.batch, r.key) for r in records if r.deployment == deployment)
    repeated = sorted(batch_key for batch_key, n in sent.items() if n > 1)
    assert not repeated, f"{len(repeated)} keys published twice in one batch: {repeated[:5]}"
    return dict(Counter(batch for batch, _ in sent.elements()))


def committed_records(
    settings: Settings, topic: str, deployment: str, expected: dict[int, int]
) -> list[PublishedRecord]:
    """What ``read_committed`` readers see of ``topic``, once ``deployment``'s batches hold
    ``expected`` records each (or after 30 s): a commit's markers reach the topic's partitions
    just after the commit returns, and until then such a reader stops short of the batch's
    records on some partitions."""
    seen: list[PublishedRecord] = []

    def complete() -> bool:
        nonlocal seen
        seen = replay_published(settings, topic)
        return published_once(seen, deployment) == expected

    wait_until(complete, 30)
    return seen


def in_other_process(settings: Settings, script: str, payload: object, *args: str) -> str:
    """Run ``script`` in a new Python process with the settings' environment and ``payload``
    pickled on its stdin (as Spark ships a task to a worker); returns the last word it printed."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        input=pickle.dumps(payload),
        env={**os.environ, **settings.to_env()},
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return proc.stdout.split()[-1].decode()


def late_dead_letters(settings: Settings, name: str, version: str) -> set[tuple[str, int, int]]:
    """(topic, partition, offset) of every record the version dead-lettered as ``late``."""
    path = Deployment(name, version, settings.home).dead_letter_path
    rows = read_arrow(path).to_pylist() if path.exists() else []
    return {(r["topic"], r["partition"], r["offset"]) for r in rows if r["error"] == "late"}


# A plain-Python evaluation of a pipeline on the records of a log prefix: rows and late records.
Reference = Callable[
    [list[Stamped], dict[str, dict[int, int]]], tuple[dict[Any, Any], set[tuple[str, int, int]]]
]


def check_commits(
    settings: Settings,
    name: str,
    version: str,
    records: list[Stamped],
    reference: Reference,
    key: str | tuple[str, ...],
    every: int = 1,
    normalize: Callable[[dict[str, Any]], dict[str, Any]] = lambda row: row,
    expect_late: bool = True,
) -> tuple[int, dict[Any, dict[str, Any]]]:
    """Compare the table at every ``every``-th commit (and the last) with ``reference`` on
    the ``records`` of the offsets that commit records; check that the dead letters hold exactly
    the late records. Returns how many commits there are and the last table, keyed as the
    reference keys it (``key``: a column, or the columns of a composite key). ``normalize``
    maps table and reference rows alike before they are compared (e.g. rounds float averages,
    whose last bits depend on the order of additions). Without ``expect_late`` (a pipeline to
    which nothing is late), the input need not have late records."""
    deployment = Deployment(name, version, settings.home)
    history = commits(deployment.table_path)
    assert [c.batch_id for c in history] == list(range(len(history)))
    chosen = history[::every]
    if chosen[-1] is not history[-1]:
        chosen.append(history[-1])
    for commit in chosen:
        expected, late = reference(records, from_spark(commit.end_offsets))
        expected = {k: normalize(row) for k, row in expected.items()}
        rows = read_arrow(deployment.table_path, commit.table_version).to_pylist()
        actual = {
            r[key] if isinstance(key, str) else tuple(r[k] for k in key): normalize(r) for r in rows
        }
        message = f"{version} batch {commit.batch_id}: {len(actual)} vs {len(expected)} rows"
        assert actual == expected, message
    assert late_dead_letters(settings, name, version) == late
    assert late or not expect_late, "the input has late records"
    return len(history), actual


def check_every_batching(
    spark: Any,
    settings: Settings,
    name: str,
    records: list[Stamped],
    reference: Reference,
    key: str | tuple[str, ...],
    first_every: int,
) -> dict[Any, dict[str, Any]]:
    """The batch caps check, after version ``cap1`` ran over the log's start one record per
    batch: ``cap1`` goes on in batches of 997 (every ``first_every``-th commit checked), then
    ``cap997`` and ``whole`` run from the start in batches of 997 and 250,000 (every commit
    checked). Each equals ``reference`` at its commits (:func:`check_commits`) and the three end
    at one table, which is returned."""
    finals = []
    for version, cap, every in (
        ("cap1", 997, first_every),
        ("cap997", 997, 1),
        ("whole", 250_000, 1),
    ):
        run_until_caught_up(spark, settings, name, version=version, max_offsets_per_trigger=cap)
        _, final = check_commits(settings, name, version, records, reference, key, every)
        finals.append(final)
    assert finals[0] == finals[1] == finals[2]
    return finals[0]


def kappa(
    settings: Settings,
    *args: str,
    stdin: str = "",
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``python -m kappa.cli *args`` with the settings (and ``env``) in its environment, its
    output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "kappa.cli", *args],
        env={**os.environ, **settings.to_env(), **(env or {})},
        cwd=REPO_ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def commit_customers(
    settings: Settings, version: str, offsets: Mapping[int, int], batch: int = 0
) -> Deployment:
    """Append a one-row commit to the customers table of ``version``, recording batch ``batch``
    at these end offsets of the customers topic (by partition), as a run's commit would."""
    deployment = Deployment("customers", version, settings.home)
    metadata = {
        BATCH_ID: str(batch),
        END_OFFSETS: json.dumps({"customers": {str(p): o for p, o in offsets.items()}}),
    }
    write_deltalake(
        str(deployment.table_path),
        pa.table({"customer_id": ["a"]}),
        mode="append",
        commit_properties=CommitProperties(custom_metadata=metadata),
    )
    return deployment
