"""Forward-only versions: a new version of fraud_alerts that only adds a threshold to its filter
starts from the live version's table and state at its latest commit instead of replaying the
log, exactly once across a SIGKILL during the copy and after it; a version whose stateful
function declares other state is refused before anything is written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bench.support.producing import fraud_events, payments, send
from bench.support.reference import Stamped, changelog_table, log_ends, replay_stamped
from bench.support.settings import private_settings
from streaming.define.registry import get_pipeline
from streaming.delta.table_reader import commits, latest_commit, read_arrow
from streaming.deployment import Deployment
from streaming.deployment.code_pin import pinned_pipeline
from streaming.settings import REPO_ROOT, Settings
from streaming.versions.forward_only import read_start
from streaming.versions.live_pointer import live_version
from streaming.versions.promotion import compare_versions
from tests.integration.helpers import kappa, kill_mid_run, run_until_caught_up
from tests.support.enrichment import enriched_reference

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=100)]

PACKAGE = "forward_only_user"
FRAUD = '''"""fraud_alerts at {version}, as a user's module (written by the test)."""
from dataclasses import replace
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from pipelines import fraud_alerts as base

VERSION = "{version}"
PIPELINE = replace(base.PIPELINE, version=VERSION, plan=base.PIPELINE.plan{change})
'''
THRESHOLD = Decimal(100)
# v2 alerts only on suspicious transactions of at least 100: a change of the output alone.
V2 = '.where(pc.field("amount") >= pa.scalar(Decimal(100), pa.decimal128(18, 2)))'
HISTORY = '''"""fraud_by_history at {version}, as a user's module (written by the test)."""
from dataclasses import replace

from pipelines import fraud_by_history as base
from pipelines.topics import TRANSACTIONS
from streaming.define import MapOf, Value, stateful

VERSION = "{version}"
STATE = {state}


@stateful(by="customer_id", key="txn_id", emits=base.ALERT, state=STATE)
def check(txn, state):
    yield from base.payment_history(base.MIN_HISTORY).function(txn, state)


PIPELINE = replace(base.PIPELINE, version=VERSION, plan=TRANSACTIONS.stream().process(check))
'''
REGIONS = '{"regions": MapOf(str, int)}'


@pytest.fixture
def package(tmp_path: Path) -> Iterator[Path]:
    """The user's package, importable by the processes the test starts (PYTHONPATH)."""
    folder = tmp_path / "user_code" / PACKAGE
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder.parent), saved) if p)
    sys.path.insert(0, str(folder.parent))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder.parent))
        for name in [m for m in sys.modules if m.startswith(PACKAGE)]:
            del sys.modules[name]
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def _settings(settings: Settings, *modules: str) -> Settings:
    return private_settings(
        settings.home.root,
        settings.broker.port,
        controller_port=settings.broker.controller_port,
        pipelines=list(modules),
    )


def _stream_run(
    settings: Settings, name: str, *flags: str, crash_at: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m streaming run NAME --until-caught-up FLAGS`` in its own process group."""
    env = {**os.environ, **settings.to_env()}
    if crash_at is not None:
        env["KAPPA_CRASH_AT"] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "streaming", "run", name, "--until-caught-up", *flags],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        start_new_session=True,
    )


def _rows(path: Path, version: int | None = None) -> dict[str, dict[str, Any]]:
    return {r["txn_id"]: r for r in read_arrow(path, version).to_pylist()}


def _alert(row: dict[str, Any]) -> dict[str, Any]:
    """A published transactions_enriched row as a fraud_alerts row."""
    return {**row, "amount": Decimal(str(row["amount"]))}


def _below(records: list[Stamped], at: dict[int, int]) -> list[Stamped]:
    return [r for r in records if r.offset < at.get(r.partition, 0)]


def _expected(
    records: list[Stamped], cut: dict[int, int], at: dict[int, int]
) -> dict[str, dict[str, Any]]:
    """fraud_alerts v2 started at ``cut`` and run to ``at`` (offsets of transactions_enriched's
    partitions): a key whose latest record came before the cut keeps v1's row (suspicious),
    one with a record since then has v2's (suspicious and at least 100)."""
    old = {k: _alert(r) for k, r in changelog_table(_below(records, cut)).items()}
    new = {k: _alert(r) for k, r in changelog_table(_below(records, at)).items()}
    since = {r.key.decode() for r in _below(records, at) if r.offset >= cut.get(r.partition, 0)}
    kept = {k: r for k, r in old.items() if k not in since and r["suspicious"]}
    written = {
        k: r for k, r in new.items() if k in since and r["suspicious"] and r["amount"] >= THRESHOLD
    }
    return kept | written


def _partitions(offsets: dict[str, dict[int, int]]) -> dict[int, int]:
    return offsets.get("transactions_enriched", {})


@pytest.mark.timeout(1500)
def test_a_forward_only_version_keeps_the_old_rows_and_computes_the_new_exactly_once(
    spark, settings, broker, package
):
    s = _settings(settings, "pipelines.transactions_enriched", f"{PACKAGE}.fraud_alerts")
    # In this process the registry keeps the modules it imported first: transactions_enriched
    # runs from a registry of its own, fraud_alerts' is first read once v2 is on disk.
    upstream = _settings(settings, "pipelines.transactions_enriched")
    module = package / "fraud_alerts.py"
    module.write_text(FRAUD.format(version="v1", change=""))
    send(s, fraud_events(1500, seed=51))
    run_until_caught_up(spark, upstream, "transactions_enriched", max_offsets_per_trigger=400)
    first = _stream_run(s, "fraud_alerts", "--max-offsets-per-trigger", "150")
    assert first.returncode == 0, first.stderr[-3000:]
    assert live_version(s.home, "fraud_alerts") == "v1"
    v1, v2 = (Deployment("fraud_alerts", v, s.home) for v in ("v1", "v2"))
    cut = latest_commit(v1.table_path)
    assert cut is not None

    # v2 changes the filter. Its start is SIGKILLed after each step of the copy in turn (the
    # cut recorded, the state, the table's files, its own log entry, the checkpoint): each
    # next start finds the copy not complete and makes it again.
    module.write_text(FRAUD.format(version="v2", change=V2))
    for step in range(1, 6):
        died = _stream_run(s, "fraud_alerts", "--forward-only", crash_at=f"forward_copy:{step}")
        assert died.returncode == -signal.SIGKILL, died.stderr[-3000:]
        half = read_start(v2)
        assert half is not None and not half.complete, step
        assert v2.table_path.exists() == (step >= 3), step

    # The next start redoes the copy from the same cut (v1 has not moved) and completes it.
    began = time.monotonic()
    done = _stream_run(s, "fraud_alerts", "--forward-only")
    forward_s = time.monotonic() - began
    assert done.returncode == 0, done.stderr[-3000:]
    start = read_start(v2)
    assert start is not None and start.complete and start.table_version is not None
    assert (start.cut.version, start.cut.batch_id) == ("v1", cut.batch_id)
    assert start.cut.end_offsets == cut.end_offsets
    assert _rows(v2.table_path, start.table_version) == _rows(v1.table_path, cut.table_version)

    # More events: v1 (live) goes on, then v2 follows it, SIGKILLed after 3 batches of its own.
    send(s, fraud_events(1500, seed=52, start_ms=1_700_002_000_000))
    run_until_caught_up(spark, upstream, "transactions_enriched", max_offsets_per_trigger=400)
    declared = get_pipeline(s.pipelines, "fraud_alerts")
    old_code = pinned_pipeline(s.home, declared, "v1").pipeline
    new_code = pinned_pipeline(s.home, declared, "v2").pipeline
    run_until_caught_up(spark, s, old_code, version="v1", max_offsets_per_trigger=150)
    at_start = len(commits(v2.table_path))
    killed = kill_mid_run(s, "fraud_alerts", 150, at_start + 3)
    assert killed >= at_start + 3
    run_until_caught_up(spark, s, new_code, version="v2", max_offsets_per_trigger=150)

    # Exactly once: v2's own batches follow the cut's in order, each table the reference.
    records = [
        r
        for r in replay_stamped(s.kafka.bootstrap_servers, ["transactions_enriched"])
        if r.topic == "transactions_enriched"
    ]
    own = [c for c in commits(v2.table_path) if c.table_version > start.table_version]
    assert [c.batch_id for c in own] == list(range(cut.batch_id + 1, cut.batch_id + 1 + len(own)))
    assert len(own) >= 4
    cut_at = _partitions(cut.end_offsets)
    for commit in own:
        expected = _expected(records, cut_at, _partitions(commit.end_offsets))
        assert _rows(v2.table_path, commit.table_version) == expected, commit.batch_id
    final = _rows(v2.table_path)
    live_end = latest_commit(v1.table_path)
    assert live_end is not None and live_end.end_offsets == own[-1].end_offsets

    # The input itself is the independent reference's, and v1's table its old rule's.
    inputs = replay_stamped(s.kafka.bootstrap_servers, ["customers", "transactions"])
    enriched, _ = enriched_reference(inputs, log_ends(inputs))
    assert {k: _alert(r) for k, r in changelog_table(records).items()} == enriched
    assert _rows(v1.table_path) == {k: r for k, r in enriched.items() if r["suspicious"]}
    # Both kinds of rows are there: old rows under 100 kept, new ones under 100 left out.
    since = {r.key.decode() for r in records if r.offset >= cut_at.get(r.partition, 0)}
    assert any(r["amount"] < THRESHOLD for k, r in final.items() if k not in since)
    assert any(
        r["suspicious"] and r["amount"] < THRESHOLD and k in since for k, r in enriched.items()
    )

    # The comparison covers the keys either version wrote after the cut.
    result = compare_versions(s, "fraud_alerts", "v1", "v2", spark=lambda: spark)
    assert "after the cut" in result.scope
    v1_rows = _rows(v1.table_path)
    before = _rows(v2.table_path, start.table_version)
    changed = {k for k in v1_rows.keys() | before.keys() if v1_rows.get(k) != before.get(k)}
    changed |= {k for k in final.keys() | before.keys() if final.get(k) != before.get(k)}
    assert result.coverage.old_keys == len(changed & v1_rows.keys()) < len(v1_rows)
    assert result.coverage.new_keys == len(changed & final.keys())

    # The same code replayed in full: the rows written after the cut agree with it.
    began = time.monotonic()
    run_until_caught_up(spark, s, new_code, version="v2full", max_offsets_per_trigger=150)
    full_s = time.monotonic() - began
    full = _rows(Deployment("fraud_alerts", "v2full", s.home).table_path)
    assert {k: r for k, r in full.items() if k in since} == {
        k: r for k, r in final.items() if k in since
    }
    shown = kappa(s, "versions", "fraud_alerts")
    assert shown.returncode == 0, shown.stderr
    [v2] = [line for line in shown.stdout.splitlines() if line.startswith("  v2 ")]
    assert v2.split()[1] == "candidate,"
    assert f"forward-only from v1 batch {cut.batch_id}" in v2

    copy_s = (start.completed_at or 0) - start.started_at
    print(
        f"\nforward-only start: copy {copy_s:.2f} s, whole start (process, Spark, copy) "
        f"{forward_s:.1f} s; full replay of the same code in process: {full_s:.1f} s "
        f"({len(records)} records of transactions_enriched)"
    )


def test_a_stateful_function_declaring_other_state_is_refused_forward_only(
    settings, broker, package
):
    s = _settings(settings, f"{PACKAGE}.fraud_by_history")
    module = package / "fraud_by_history.py"
    module.write_text(HISTORY.format(version="v1", state=REGIONS))
    send(s, payments(300, seed=61))
    first = _stream_run(s, "fraud_by_history")
    assert first.returncode == 0, first.stderr[-3000:]

    state = '{"regions": MapOf(str, int), "payments": Value(int, default=0)}'
    module.write_text(HISTORY.format(version="v2", state=state))
    versions = kappa(s, "versions", "fraud_by_history")
    assert versions.returncode == 0, versions.stderr
    assert "v2" in versions.stdout and "state" in versions.stdout
    assert "declared state" in versions.stdout and "full replay: ~" in versions.stdout

    refused = _stream_run(s, "fraud_by_history", "--forward-only")
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "changes its state" in refused.stderr and "declared state" in refused.stderr
    assert "payments" in refused.stderr
    deploy = kappa(s, "deploy", "fraud_by_history", "--version", "v2", "--forward-only")
    assert deploy.returncode != 0 and "declared state" in deploy.stderr
    v2 = Deployment("fraud_by_history", "v2", s.home)
    assert [p for p in v2.owned_paths() if p.exists()] == []
