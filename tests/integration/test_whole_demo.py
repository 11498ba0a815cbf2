"""The whole demo live at once on one engine, through Dagster, surviving the SIGKILL of the
engine and of the run host.

Every demo pipeline is launched as a user launches it (a ``deploy_<pipeline>`` run on its
version's partition), and a second version of ``transactions_enriched`` beside the first, while
demo-like records arrive on every input topic. Once each deployment has committed, the engine's
process group is killed with SIGKILL and more records are sent; with no action from the test,
the runs (still ``STARTED``) bring the engine back and start their deployments again from their
checkpoints. Then the run host, the one process executing all 13 runs, is killed with SIGKILL
and the last records are sent: Dagster's run monitoring resumes every run in a new host, whose
steps take their deployments over. Then each table, at its last commit, equals its plain-Python
reference at the offsets that commit records, exactly the late records are dead-lettered, and
the published topics hold each change once for ``read_committed`` readers.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from typing import Any

import pytest
from dagster import DagsterEventType, DagsterInstance

from assets.run_host.client import RunHostClient, RunHostUnavailableError
from bench.support.producing import Out, clickstream_with_profiles, fraud_events, send, trade_events
from bench.support.reference import (
    Stamped,
    changelog_table,
    customers_state,
    replay_stamped,
    spend_state,
)
from streaming.define.registry import get_pipeline, pipeline_names
from streaming.delta.table_reader import latest_commit, read_arrow
from streaming.deployment import Deployment
from streaming.engine.address import EngineAddress, read_address
from streaming.engine.client import EngineClient, EngineRefusedError, EngineUnavailableError
from streaming.kafka.log import KafkaLog
from streaming.kafka.offsets import from_spark
from streaming.processes import pid_alive
from streaming.versions.live_pointer import live_version
from streaming.wait import wait_until
from tests.integration.dagster_platform import Platform, running_platform
from tests.integration.helpers import check_commits, published_once, replay_published
from tests.support.enrichment import (
    clicks_last_search_reference,
    enriched_reference,
    spend_hourly_reference,
)
from tests.support.seed_references import (
    clicks_enriched_reference,
    clicks_per_zip_reference,
    fraud_by_history_reference,
    stock_moving_avg_reference,
    stock_stats_reference,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=170)]

ENGINE_EVENT = DagsterEventType.ENGINE_EVENT
LAUNCH = {"trigger_interval": "1 second", "report_every_s": 2.0}
ENRICHED = "transactions_enriched"
STOCK_START_MS = 1_700_000_040_000
# Each pipeline's table: its key, and its reference on the records of a log prefix (rows, late).
Reference = Callable[[list[Stamped], dict[str, dict[int, int]]], tuple[dict, set]]
TIMED: dict[str, tuple[str | tuple[str, ...], Reference]] = {
    ENRICHED: ("txn_id", enriched_reference),
    "spend_hourly": (("customer_id", "window_start"), spend_hourly_reference),
    "fraud_by_history": ("txn_id", fraud_by_history_reference),
    "clicks_enriched": ("click_id", clicks_enriched_reference),
    "clicks_per_zip": (("zip_code", "window_start"), clicks_per_zip_reference),
    "clicks_last_search": ("click_id", clicks_last_search_reference),
    "stock_stats": (("ticker", "window_start"), stock_stats_reference),
    "stock_moving_avg": (("ticker", "window_start"), stock_moving_avg_reference),
    "stock_stats_final": (("ticker", "window_start"), partial(stock_stats_reference, final=True)),
}


def _demo_records() -> tuple[list[Out], list[Out]]:
    """Customers and transactions, profiles, searches and clicks, and trades, in event-time
    order within each generator (some out of order, some late), split into two halves."""
    logs = [
        fraud_events(900, seed=91, step_ms=10_000),
        clickstream_with_profiles(500, seed=92, users=8, step_ms=20_000),
        trade_events(500, seed=93, start_ms=STOCK_START_MS, late_burst_at=200),
    ]
    first = [r for log in logs for r in log[: len(log) // 2]]
    rest = [r for log in logs for r in log[len(log) // 2 :]]
    return first, rest


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    """The average's last bits depend on how the sum was cast; eleven digits are exact."""
    return {**row, "avg_price": round(row["avg_price"], 11)} if "avg_price" in row else row


def _deployments(platform: Platform) -> list[tuple[str, str]]:
    settings = platform.settings
    names = pipeline_names(settings.pipelines)
    return [(n, get_pipeline(settings.pipelines, n).version) for n in names] + [(ENRICHED, "v2")]


def _committed(platform: Platform, name: str, version: str) -> bool:
    return latest_commit(Deployment(name, version, platform.settings.home).table_path) is not None


def _read_to_the_end(platform: Platform, name: str, version: str) -> bool:
    """Whether the version's last commit covers every record of its input topics now."""
    settings = platform.settings
    commit = latest_commit(Deployment(name, version, settings.home).table_path)
    if commit is None:
        return False
    topics = list(get_pipeline(settings.pipelines, name).topics)
    with KafkaLog.of(settings.kafka) as log:
        ends = log.latest(topics)
    covered = from_spark(commit.end_offsets)
    return all(
        covered.get(topic, {}).get(p, 0) >= end
        for topic, parts in ends.items()
        for p, end in parts.items()
    )


def _table(
    platform: Platform, name: str, version: str, key: str | tuple[str, ...]
) -> dict[Any, dict[str, Any]]:
    """The version's table at its last commit, by key (a column, or a composite key's)."""
    path = Deployment(name, version, platform.settings.home).table_path
    commit = latest_commit(path)
    assert commit is not None
    rows = read_arrow(path, commit.table_version).to_pylist()
    return {r[key] if isinstance(key, str) else tuple(r[k] for k in key): r for r in rows}


def _prefix_of(platform: Platform, name: str, version: str) -> dict[str, dict[int, int]]:
    commit = latest_commit(Deployment(name, version, platform.settings.home).table_path)
    assert commit is not None
    return from_spark(commit.end_offsets)


def _before(records: list[Stamped], prefix: dict[str, dict[int, int]]) -> list[Stamped]:
    return [r for r in records if r.offset < prefix.get(r.topic, {}).get(r.partition, 0)]


def _engine_log(platform: Platform) -> str:
    path = platform.settings.home.log("engine")
    return path.read_text()[-3000:] if path.exists() else "no engine log"


def _in_engine(platform: Platform) -> list[tuple[str, str, str]]:
    """What the engine says of each deployment it hosts (for failure messages)."""
    try:
        found = EngineClient(platform.settings.home).deployments()
    except (EngineUnavailableError, EngineRefusedError) as exc:
        return [("-", "-", str(exc))]
    return [(d["id"], d["state"], d["error"]) for d in found]


def _hosted(platform: Platform, runs: dict[tuple[str, str], str]) -> bool:
    """Whether the engine that answers runs every deployment, each for its Dagster run."""
    try:
        found = EngineClient(platform.settings.home).deployments()
    except (EngineUnavailableError, EngineRefusedError):
        return False
    running = {(d["pipeline"], d["version"]): d["run_id"] for d in found if d["state"] == "running"}
    return running == runs


def _host_runs(platform: Platform) -> tuple[int, set[str]]:
    """The run host's pid and the runs it executes ((0, none) when no host answers)."""
    try:
        pid, runs = RunHostClient(platform.settings.home).runs()
    except RunHostUnavailableError:
        return 0, set()
    return pid, set(runs)


def _executing_in(platform: Platform, run_ids: list[str], pid: int) -> bool:
    """Whether every run says, in its event log, that the run host ``pid`` executes it."""
    said = f"Executing in the run host (pid {pid}), resumed."
    instance = DagsterInstance.from_config(str(platform.settings.home.dagster))
    try:
        return all(
            any(e.message == said for e in instance.all_logs(run, of_type=ENGINE_EVENT))
            for run in run_ids
        )
    finally:
        instance.dispose()


def _launch_all(platform: Platform, produced_by_test: list[Out]) -> dict[tuple[str, str], str]:
    """Every deployment's run, as a user materializing every table launches them. Two wait for
    what they need: a deployment reading a topic another one publishes, until that topic
    exists (it does from its first publication, and a deployment refuses to start on a missing
    topic); the second version of a pipeline, until the first is live (the first deployment of
    a pipeline becomes live, and which of two launched together starts first is a race)."""
    settings = platform.settings
    deployments = _deployments(platform)
    # Topics only a deployment writes (a changelog may share its input's name, as customers').
    produced = {r.topic for r in produced_by_test}
    written = {t for n, _ in deployments for t in get_pipeline(settings.pipelines, n).output_topics}
    published = written - produced
    later = [
        d for d in deployments if set(get_pipeline(settings.pipelines, d[0]).topics) & published
    ] + [(ENRICHED, "v2")]
    runs = {d: platform.launch(*d, **LAUNCH) for d in deployments if d not in later}
    needed = {t for name, _ in later for t in get_pipeline(settings.pipelines, name).topics}
    needed &= published

    def ready() -> bool:
        with KafkaLog.of(settings.kafka) as log:
            exist = all(log.partitions(needed).values())
        return exist and live_version(settings.home, ENRICHED) == "v1"

    assert wait_until(ready, timeout_s=240, interval_s=1), (needed, _engine_log(platform))
    runs.update({d: platform.launch(*d, **LAUNCH) for d in later})
    return runs


@pytest.mark.timeout(1200)  # 13 deployments, then every one again after the SIGKILL, on 2 cores
def test_the_whole_demo_on_one_engine_resumes_after_a_sigkill_and_equals_the_references(
    tmp_path, shared_broker
):  # type: ignore[no-untyped-def]
    with running_platform(tmp_path / "home", shared_broker) as platform:
        settings = platform.settings
        first, rest = _demo_records()
        middle, last = rest[: len(rest) // 2], rest[len(rest) // 2 :]
        send(settings, first)
        runs = _launch_all(platform, first)
        assert len(runs) == len(pipeline_names(settings.pipelines)) + 1
        deployments = list(runs)

        def states() -> dict[str, str]:
            return {f"{n}__{v}": platform.status(run) for (n, v), run in runs.items()}

        assert wait_until(
            lambda: all(_committed(platform, *d) for d in deployments), timeout_s=300
        ), ({d: _committed(platform, *d) for d in deployments}, states(), _engine_log(platform))
        assert live_version(settings.home, ENRICHED) == "v1"

        # The engine dies with everything in it: its JVM and Python workers are its group.
        engine = read_address(settings.home.engine_address, EngineAddress)
        assert engine is not None
        assert wait_until(lambda: _hosted(platform, runs), timeout_s=60), (
            _in_engine(platform),
            states(),
        )
        print("lock holders before the kill:", {d: platform.holder_pid(*d) for d in deployments})
        os.killpg(engine.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        assert wait_until(lambda: not pid_alive(engine.pid), timeout_s=30)
        send(settings, middle)

        # The runs bring the engine back and start every deployment again, without a retry.
        def back() -> bool:
            address = read_address(settings.home.engine_address, EngineAddress)
            return address is not None and address.pid != engine.pid and _hosted(platform, runs)

        assert wait_until(back, timeout_s=240, interval_s=0.5), (
            states(),
            _in_engine(platform),
            _engine_log(platform),
        )
        print(f"engine SIGKILLed -> every deployment back in {time.monotonic() - killed_at:.1f} s")
        assert set(states().values()) == {"STARTED"}

        assert wait_until(
            lambda: all(_read_to_the_end(platform, *d) for d in deployments),
            timeout_s=300,
            interval_s=1,
        ), (
            {d: _read_to_the_end(platform, *d) for d in deployments},
            states(),
            _engine_log(platform),
        )
        assert set(states().values()) == {"STARTED"}
        engine_back = read_address(settings.home.engine_address, EngineAddress)
        assert engine_back is not None and engine_back.pid != engine.pid

        # One process executes every deployment's run; it dies with all 13.
        host_pid, hosted = _host_runs(platform)
        assert set(runs.values()) <= hosted, (hosted, states())
        os.kill(host_pid, signal.SIGKILL)
        killed_at = time.monotonic()
        assert wait_until(lambda: not pid_alive(host_pid), timeout_s=30)
        send(settings, last)

        def resumed() -> bool:
            pid, hosted = _host_runs(platform)
            return (
                pid not in (0, host_pid)
                and set(runs.values()) <= hosted
                and _executing_in(platform, list(runs.values()), pid)
            )

        assert wait_until(resumed, timeout_s=240, interval_s=0.5), (_host_runs(platform), states())
        print(f"run host SIGKILLed -> every run resumed in {time.monotonic() - killed_at:.1f} s")
        assert wait_until(
            lambda: all(_read_to_the_end(platform, *d) for d in deployments),
            timeout_s=300,
            interval_s=1,
        ), ({d: _read_to_the_end(platform, *d) for d in deployments}, states())
        assert set(states().values()) == {"STARTED"}
        assert _hosted(platform, runs), _in_engine(platform)

        _check_tables(platform)
        _check_published(platform)

        # Terminating the runs stops every deployment; all at once, each at a batch boundary of
        # its own, on two cores (Ctrl-C of `kappa up` takes about 40 s for as many).
        for run in runs.values():
            platform.client.terminate_run(run)
        assert wait_until(lambda: set(states().values()) == {"CANCELED"}, 180, 1.0), states()
        assert not any(state == "running" for _, state, _ in _in_engine(platform))


def _check_tables(platform: Platform) -> None:
    """The seeds' tables against their references. The stream outputs (large_trades,
    searches_by_term, search_counts), click_sessions and quiet_customers have tests of their own
    against references; here they are launched, committed, resumed and read to the end."""
    settings = platform.settings
    bootstrap = settings.kafka.bootstrap_servers
    inputs = replay_stamped(bootstrap, ["customers", "transactions", "profiles", "searches"])
    inputs += replay_stamped(bootstrap, ["clicks", "trades"])
    for name, (key, reference) in TIMED.items():
        versions = (
            ("v1", "v2") if name == ENRICHED else (get_pipeline(settings.pipelines, name).version,)
        )
        for version in versions:
            count, table = check_commits(
                settings, name, version, inputs, reference, key, every=10**6, normalize=_rounded
            )
            assert count >= 2 and table, f"{name} {version}: {count} commits, {len(table)} rows"

    # The tables without event time (nothing is late in them).
    customers = _table(platform, "customers", "v1", "customer_id")
    assert customers == customers_state(_before(inputs, _prefix_of(platform, "customers", "v1")))
    spend = _table(platform, "customer_spend", "v1", "customer_id")
    assert spend == spend_state(_before(inputs, _prefix_of(platform, "customer_spend", "v1")))
    assert sum(r["txn_count"] for r in spend.values()) == sum(
        1 for r in inputs if r.topic == "transactions"
    )

    # fraud_alerts reads v1's published changes: at the end, the suspicious rows of v1's table.
    enriched, _ = enriched_reference(inputs, _prefix_of(platform, ENRICHED, "v1"))
    expected = {k: row for k, row in enriched.items() if row["suspicious"]}
    assert 0 < len(expected) < len(enriched)
    assert _table(platform, "fraud_alerts", "v1", "txn_id") == expected


def _check_published(platform: Platform) -> None:
    """Read committed, each published topic holds each batch's changes once and is its table."""
    settings = platform.settings
    enriched = _table(platform, ENRICHED, "v1", "txn_id")
    as_json = json.loads(json.dumps(enriched, default=float))

    def topic_is_table() -> bool:
        return changelog_table(replay_published(settings, ENRICHED)) == as_json

    assert wait_until(topic_is_table, timeout_s=30)
    published = replay_published(settings, ENRICHED)
    published_once(published, f"{ENRICHED}__v1")
    assert {r.deployment for r in published} == {f"{ENRICHED}__v1"}  # v2 is not live

    alerts = _table(platform, "fraud_alerts", "v1", "txn_id")
    published = replay_published(settings, "fraud_alerts")
    published_once(published, "fraud_alerts__v1")
    topic = changelog_table(published)
    assert set(topic) == set(alerts)
    for key, row in topic.items():
        assert Decimal(str(row.pop("amount"))) == alerts[key]["amount"]
        assert row == {c: v for c, v in alerts[key].items() if c != "amount"}

    final = "stock_stats_final"
    published = replay_published(settings, final)
    published_once(published, f"{final}__v1")
    windows = Counter(r.key for r in published)
    rows = _table(platform, final, "v1", ("ticker", "window_start"))
    assert set(windows.values()) == {1} and len(windows) == len(rows)
    assert {tuple(json.loads(k).values()) for k in windows} == set(rows)
