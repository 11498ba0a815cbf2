"""Asking the tables: SQL, rows by key and reads at one cut of the log, each compared with a
plain-Python reference computed from the log's records up to the offsets the answer names."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from typing import Any

import pytest
from dagster import materialize

from assets.alerts import alerts_per_country_asset
from assets.resources import KappaSettings
from bench.support.producing import customer_changes, fraud_events, send
from bench.support.reference import (
    changelog_table,
    customers_state,
    replay,
    replay_stamped,
)
from streaming.define.registry import get_pipeline
from streaming.deployment import Deployment, DeploymentLock
from streaming.query import KeyLookup, NoConsistentCutError, run_sql
from streaming.run.options import RunOptions
from streaming.run.runner import PipelineRunner
from streaming.settings import REPO_ROOT, Settings
from streaming.wait import wait_until
from tests.integration.helpers import kappa, run_until_caught_up
from tests.support.enrichment import enriched_reference

pytestmark = pytest.mark.integration

Offsets = dict[str, dict[int, int]]


def _prefix(records: list[Any], offsets: Offsets) -> list[Any]:
    return [r for r in records if r.offset < offsets.get(r.topic, {}).get(r.partition, 0)]


def _offsets(stderr: str) -> Offsets:
    """The input offsets ``kappa sql`` says it read (its line on stderr)."""
    found = re.search(r"offsets (\{.*?\}\}); read", stderr)
    assert found, stderr
    return {t: {int(p): o for p, o in parts.items()} for t, parts in json.loads(found[1]).items()}


def _jsonl(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_sql_and_rows_by_key_equal_the_log_up_to_the_commit_they_read(spark, settings, broker):
    first = customer_changes(700, seed=5, keys=60)
    send(settings, first)
    run_until_caught_up(spark, settings, "customers", max_offsets_per_trigger=150)

    done = kappa(
        settings,
        "sql",
        "SELECT country, count(*) AS n, min(email) AS first_email FROM customers "
        "GROUP BY country ORDER BY country",
        "--format",
        "jsonl",
    )
    assert done.returncode == 0, done.stderr
    offsets = _offsets(done.stderr)
    state = customers_state(_prefix(replay(settings.kafka.bootstrap_servers, "customers"), offsets))
    by_country = Counter(row["country"] for row in state.values())
    assert _jsonl(done.stdout) == [
        {
            "country": country,
            "n": n,
            "first_email": min(r["email"] for r in state.values() if r["country"] == country),
        }
        for country, n in sorted(by_country.items())
    ]

    # Keys deleted (and never back), deleted and re-created, never seen, asked twice.
    records = replay(settings.kafka.bootstrap_servers, "customers")
    deleted, recreated = _deleted_and_recreated(records, state)
    assert deleted and recreated
    asked = [*sorted(deleted)[:3], *sorted(recreated)[:3], "k99999", sorted(recreated)[0]]
    got = kappa(settings, "table", "get", "customers", *asked, "--format", "jsonl")
    assert got.returncode == 0, got.stderr
    wanted = [k for k in dict.fromkeys(asked) if k in state]
    assert _jsonl(got.stdout) == [state[k] for k in wanted]

    warm = KeyLookup(settings, "customers")
    every = sorted({r.key.decode() for r in records if r.key})
    assert warm.get(*every).to_pylist() == [state[k] for k in every if k in state]

    # More changes: the same warm lookup follows the new commits.
    send(settings, customer_changes(300, seed=6, keys=60))
    run_until_caught_up(spark, settings, "customers", max_offsets_per_trigger=150)
    state = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
    assert warm.get(*every).to_pylist() == [state[k] for k in every if k in state]


def _deleted_and_recreated(records: list[Any], live: dict[str, Any]) -> tuple[set, set]:
    """Keys whose last record is a tombstone, and live keys that had a tombstone before."""
    tombstoned = {r.key.decode() for r in records if r.value is None}
    return tombstoned - set(live), tombstoned & set(live)


# "Which suspicious transactions came from customers whose country changed since?", the
# README's worked example (checked to be the same query below).
MOVED_SINCE = (
    "SELECT t.txn_id, t.customer_id, t.country AS txn_country, "
    "t.customer_country AS country_then, c.country AS country_now "
    "FROM transactions_enriched t JOIN customers c ON c.customer_id = t.customer_id "
    "WHERE t.suspicious AND c.country <> t.customer_country ORDER BY t.txn_id"
)


def _readme_example() -> str:
    """The SQL of the README's ``kappa sql --consistent "..."`` example, on one line."""
    text = (REPO_ROOT / "README.md").read_text()
    found = re.search(r'kappa sql --consistent "(.*?)"', text, re.DOTALL)
    assert found, "the README has no kappa sql --consistent example"
    return " ".join(found[1].split())


def _moved_since(records: list[Any], cut: Offsets) -> list[dict[str, Any]]:
    enriched, _ = enriched_reference(records, cut)
    customers = customers_state(_prefix([r for r in records if r.topic == "customers"], cut))
    rows = []
    for txn_id, row in sorted(enriched.items()):
        now = customers.get(row["customer_id"])
        then = row["customer_country"]
        if row["suspicious"] and now is not None and then is not None and now["country"] != then:
            rows.append(
                {
                    "txn_id": txn_id,
                    "customer_id": row["customer_id"],
                    "txn_country": row["country"],
                    "country_then": then,
                    "country_now": now["country"],
                }
            )
    return rows


class _Producer(threading.Thread):
    """Fraud-detection events, batch after batch, each later in event time, until stopped."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(daemon=True)
        self.settings, self.stopped, self.batches = settings, threading.Event(), 0

    def run(self) -> None:
        while not self.stopped.is_set():
            self.batches += 1
            start = 1_700_000_000_000 + self.batches * 200_000
            send(self.settings, fraud_events(200, seed=100 + self.batches, start_ms=start))
            self.stopped.wait(0.3)


class _Deployment(threading.Thread):
    """A continuous deployment in this process, holding its lock as ``kappa run`` does."""

    def __init__(self, spark: Any, settings: Settings, name: str) -> None:
        super().__init__(daemon=True)
        pipeline = get_pipeline(settings.pipelines, name)
        self.deployment = Deployment(name, pipeline.version, settings.home)
        options = RunOptions(mode="continuous", trigger_interval="1 second", report_every_s=3600)
        self.runner = PipelineRunner(spark, pipeline, self.deployment, settings, options)
        self.error: BaseException | None = None

    def run(self) -> None:
        lock = DeploymentLock(self.deployment.lock_path)
        lock.acquire(self.deployment.id)
        try:
            self.runner.run()
        except BaseException as exc:
            self.error = exc
        finally:
            lock.release()

    def stop(self) -> None:
        self.runner.request_stop()
        self.join(timeout=120)
        assert not self.is_alive() and self.error is None, self.error


@pytest.mark.timeout(600)
def test_a_join_at_one_cut_while_the_producer_writes_then_a_stopped_deployment_is_refused(
    spark, settings, broker
):
    # Refused once the newest common cut is 4 s older than the newest cut; the reads that must
    # succeed accept an older cut, since on a loaded machine a deployment may fall a few
    # seconds behind between two reads.
    settings = settings.model_copy(
        update={"cuts": settings.cuts.model_copy(update={"max_lag_s": 4.0})}
    )
    env = {"KAPPA_CUT_MAX_LAG_S": "4"}
    patient = 300.0
    assert _readme_example() == " ".join(MOVED_SINCE.split())
    send(settings, fraud_events(600, seed=41))
    producer = _Producer(settings)
    customers = _Deployment(spark, settings, "customers")
    enriched = _Deployment(spark, settings, "transactions_enriched")
    producer.start()
    customers.start()
    enriched.start()
    try:
        assert wait_until(
            lambda: _consistent_cut(settings, patient) >= 3, timeout_s=240, interval_s=1
        )
        before = producer.batches
        done = kappa(
            settings,
            "sql",
            "--consistent",
            MOVED_SINCE,
            "--max-lag",
            str(patient),
            "--format",
            "jsonl",
            "--limit",
            "100000",
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert "consistent at cut #" in done.stderr
        cut = _offsets(done.stderr)
        assert set(cut) == {"customers", "transactions"}
        # The same read from Python: Arrow, with the cut and every table's commit at it.
        result = run_sql(settings, MOVED_SINCE, consistent=True, max_lag_s=patient)
        assert result.cut is not None and result.cut.id >= _cut_id(done.stderr)
        records = replay_stamped(settings.kafka.bootstrap_servers, ["customers", "transactions"])
        assert producer.batches > before, "the producer did not write during the query"
        assert any(r.offset >= cut[r.topic].get(r.partition, 0) for r in records)  # past the cut
        expected = _moved_since(records, cut)
        assert expected, "no customer moved after a suspicious transaction"
        assert _jsonl(done.stdout) == expected
        assert result.table.to_pylist() == _moved_since(records, result.cut.offsets)
        assert {r.name: r.offsets for r in result.reads} == {
            "transactions_enriched": result.cut.offsets,
            "customers": {"customers": result.cut.offsets["customers"]},
        }

        customers.stop()
        assert wait_until(lambda: _refused(settings), timeout_s=60, interval_s=0.5)
        refused = kappa(settings, "sql", "--consistent", MOVED_SINCE, env=env)
        assert refused.returncode == 2
        [line] = refused.stderr.strip().splitlines()
        assert line.startswith("kappa: error: no consistent cut within 4 s of the newest data")
        assert "customers__v1 is" in line and "not running (kappa deploy customers)" in line
        assert "--latest" in line
        latest = kappa(settings, "sql", "--latest", MOVED_SINCE, "--format", "csv", env=env)
        assert latest.returncode == 0, latest.stderr
        assert "NOT one cut" in latest.stderr
    finally:
        producer.stopped.set()
        producer.join(timeout=60)
        for deployment in (customers, enriched):
            if deployment.is_alive():
                deployment.stop()


def _consistent_cut(settings: Settings, max_lag_s: float) -> int:
    """The cut a consistent read of both tables uses now, -1 if there is none."""
    try:
        result = run_sql(settings, MOVED_SINCE, consistent=True, max_lag_s=max_lag_s)
    except (NoConsistentCutError, FileNotFoundError):
        return -1
    assert result.cut is not None
    return result.cut.id


def _cut_id(stderr: str) -> int:
    found = re.search(r"cut #(\d+)", stderr)
    assert found, stderr
    return int(found[1])


def _refused(settings: Settings) -> bool:
    try:
        run_sql(settings, MOVED_SINCE, consistent=True)
    except NoConsistentCutError:
        return True
    return False


def test_the_report_reads_alerts_and_customers_at_one_cut_and_records_it(
    spark, settings, broker, monkeypatch
):
    send(settings, fraud_events(1200, seed=43))
    for name in ("customers", "transactions_enriched", "fraud_alerts"):
        run_until_caught_up(spark, settings, name, max_offsets_per_trigger=400)
    for name, value in settings.to_env().items():
        monkeypatch.setenv(name, value)

    result = materialize([alerts_per_country_asset()], resources={"kappa": KappaSettings()})
    assert result.success
    [event] = result.asset_materializations_for_node("reports__alerts_per_country")
    meta = {k: getattr(v, "value", getattr(v, "data", v)) for k, v in event.metadata.items()}
    cut = {t: {int(p): o for p, o in parts.items()} for t, parts in meta["cut_offsets"].items()}
    assert set(cut) == {"customers", "transactions_enriched"}

    log = replay_stamped(settings.kafka.bootstrap_servers, ["customers", "transactions_enriched"])
    alerts = {
        k: row
        for k, row in changelog_table(
            _prefix([r for r in log if r.topic != "customers"], cut)
        ).items()
        if row["suspicious"]
    }
    customers = customers_state(_prefix([r for r in log if r.topic == "customers"], cut))
    assert alerts, "no alert in the reference"
    per_country = Counter(row["country"] for row in alerts.values())
    moved = sum(
        1
        for row in alerts.values()
        if row["customer_id"] in customers
        and row["customer_country"] is not None
        and customers[row["customer_id"]]["country"] != row["customer_country"]
    )
    assert meta["alerts"] == len(alerts)
    assert meta["moved_since"] == moved
    assert {k: v for k, v in meta.items() if k.startswith("country.")} == {
        f"country.{c}": n for c, n in per_country.items()
    }
    assert isinstance(meta["cut"], int) and meta["cut_records_behind"] == 0
