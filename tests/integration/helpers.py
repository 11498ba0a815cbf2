"""Running pipelines and the CLI in tests, writing tables as a run would, and reading them back
as plain dicts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, write_deltalake

from kappa.testing.reference import Stamped, table_state
from streaming.define import Pipeline
from streaming.define.registry import get_pipeline
from streaming.delta.commit_info import BATCH_ID, END_OFFSETS
from streaming.delta.table_reader import commits, read_arrow
from streaming.kafka.offsets import from_spark
from streaming.run.deployment import Deployment
from streaming.run.options import RunOptions
from streaming.run.reporting import Snapshot
from streaming.run.runner import PipelineRunner
from streaming.settings import REPO_ROOT, Settings
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


def committed_batches(settings: Settings, name: str, version: str = "v1") -> int:
    """How many commits the version's table has (0 before it exists)."""
    try:
        return len(commits(Deployment(name, version, settings.home).table_path))
    except FileNotFoundError:
        return 0


def kill_mid_run(
    settings: Settings, name: str, max_offsets: int, batches: int, timeout_s: float = 180
) -> int:
    """Run the pipeline as its own process tree (`python -m streaming run`, ``max_offsets`` per
    batch), SIGKILL the driver, its JVM and its Python workers once the table has ``batches``
    commits, and return how many it had when killed."""
    cmd = [sys.executable, "-m", "streaming", "run", name, "--until-caught-up"]
    proc = subprocess.Popen(
        [*cmd, "--max-offsets-per-trigger", str(max_offsets)],
        env={**os.environ, **settings.to_env()},
        cwd=REPO_ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_until(
            lambda: committed_batches(settings, name) >= batches or proc.poll() is not None,
            timeout_s=timeout_s,
        ), "the pipeline never committed"
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return committed_batches(settings, name)


def kill_twice_mid_run(
    settings: Settings, name: str, max_offsets: int, batches: int
) -> tuple[int, int]:
    """:func:`kill_mid_run` once the table has ``batches`` commits, then again (resumed from
    its checkpoint) after 3 more; the commits the table had at each kill."""
    first = kill_mid_run(settings, name, max_offsets, batches, timeout_s=240)
    return first, kill_mid_run(settings, name, max_offsets, first + 3)


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
) -> tuple[int, dict[Any, dict[str, Any]]]:
    """Compare the table at every ``every``-th commit (and the last) with ``reference`` on
    the ``records`` of the offsets that commit records; check that the dead letters hold exactly
    the late records. Returns how many commits there are and the last table, keyed as the
    reference keys it (``key``: a column, or the columns of a composite key)."""
    deployment = Deployment(name, version, settings.home)
    history = commits(deployment.table_path)
    assert [c.batch_id for c in history] == list(range(len(history)))
    chosen = history[::every]
    if chosen[-1] is not history[-1]:
        chosen.append(history[-1])
    for commit in chosen:
        expected, late = reference(records, from_spark(commit.end_offsets))
        rows = read_arrow(deployment.table_path, commit.table_version).to_pylist()
        actual = {r[key] if isinstance(key, str) else tuple(r[k] for k in key): r for r in rows}
        message = f"{version} batch {commit.batch_id}: {len(actual)} vs {len(expected)} rows"
        assert actual == expected, message
    assert late_dead_letters(settings, name, version) == late
    assert late, "the input has late records"
    return len(history), actual


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
