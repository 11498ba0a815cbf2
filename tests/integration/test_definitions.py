"""The Dagster code location loads, and materializing a table runs its pipeline via Pipes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, PathMetadataValue

from assets.definitions import defs
from bench.support.producing import customer_changes, send
from bench.support.reference import customers_state, replay
from streaming.settings import REPO_ROOT
from tests.integration.helpers import table_rows
from tests.integration.materializing import materialize_table


def test_definitions_load_with_topics_upstream_of_tables():
    graph = defs().resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {
        "kafka/customers",
        "kafka/transactions",
        "tables/customers",
        "tables/customer_spend",
    } <= keys
    customers = graph.get(AssetKey(["tables", "customers"]))
    assert AssetKey(["kafka", "customers"]) in customers.parent_keys
    spend = graph.get(AssetKey(["tables", "customer_spend"]))
    assert AssetKey(["kafka", "transactions"]) in spend.parent_keys
    # one partition per version; a deploy run plans no checks (it reports lag and freshness)
    assert customers.partitions_def.name == "customers_versions"
    deploy = defs().resolve_job_def("deploy_customers")
    assert deploy.asset_layer.asset_graph.asset_check_keys == set()


def test_the_version_sensors_run_at_the_interval_the_settings_give(monkeypatch):
    monkeypatch.setenv("KAPPA_SENSOR_INTERVAL_S", "3")
    intervals = {s.name: s.minimum_interval_seconds for s in defs().sensors}
    assert intervals["new_version_sensor"] == intervals["candidate_sensor"] == 3
    monkeypatch.delenv("KAPPA_SENSOR_INTERVAL_S")
    assert {s.name: s.minimum_interval_seconds for s in defs().sensors}["candidate_sensor"] == 10


def test_stdlib_platform_module_is_not_shadowed():
    out = subprocess.run(
        [sys.executable, "-c", "import platform; print(platform.system())"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "Linux"


@pytest.mark.integration
def test_materializing_a_table_runs_the_pipeline_and_reports_metadata(settings, broker, tmp_path):
    send(settings, customer_changes(2000, seed=12))
    # the suite on the engine's executors, as for a table over quality.local_max_rows
    on_spark = settings.model_copy(
        update={"quality": settings.quality.model_copy(update={"local_max_rows": 0})}
    )
    result = materialize_table(
        on_spark, "customers", checks=("quality_suite",), raise_on_error=True
    )
    assert result.success
    mat = result.asset_materializations_for_node("tables__customers")[-1]
    assert mat.partition == "v1"
    meta = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    expected = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
    assert meta["dagster/row_count"] == len(expected)
    assert meta["records_processed"] == "2000"  # a total: plain text, not a plotted number
    assert meta["total_lag"] == 0
    assert meta["dead_lettered_total"] == "0"
    assert sum(meta["committed_offsets"]["customers"].values()) == 2000
    assert isinstance(mat.metadata["table_path"], PathMetadataValue)
    assert meta["live_version"] == "v1" and meta["role"] == "live"
    assert table_rows(settings, "customers") == expected
    evaluations = result.get_asset_check_evaluations()
    assert {e.check_name for e in evaluations} == {"lag", "freshness", "quality_suite"}
    assert {e.partition for e in evaluations} == {"v1"}
    [evaluation] = [e for e in evaluations if e.check_name == "quality_suite"]
    assert evaluation.passed
    check_meta = {k: getattr(v, "value", v) for k, v in evaluation.metadata.items()}
    assert check_meta["row_count"] == len(expected)
    assert check_meta["expectations_failed"] == 0
    assert check_meta["checked_with"] == "spark"
    assert Path(check_meta["data_docs_index"]).exists()


def test_lineage_runs_from_topics_through_tables_and_published_topics_to_reports():
    graph = defs().resolve_asset_graph()
    parents = {
        key.to_user_string(): {p.to_user_string() for p in graph.get(key).parent_keys}
        for key in graph.get_all_asset_keys()
    }
    assert parents["tables/transactions_enriched"] == {"kafka/transactions", "kafka/customers"}
    assert parents["kafka/transactions_enriched"] == {"tables/transactions_enriched"}
    assert parents["tables/fraud_alerts"] == {"kafka/transactions_enriched"}
    assert parents["kafka/fraud_alerts"] == {"tables/fraud_alerts"}
    assert parents["reports/alerts_per_country"] == {"tables/fraud_alerts", "tables/customers"}
    assert parents["tables/fraud_by_history"] == {"kafka/transactions"}
    assert parents["tables/quiet_customers"] == {"kafka/transactions"}
    assert parents["tables/stock_stats"] == {"kafka/trades"}
    assert parents["tables/stock_moving_avg"] == {"kafka/trades"}
    assert parents["tables/stock_stats_final"] == {"kafka/trades"}
    assert parents["kafka/stock_stats_final"] == {"tables/stock_stats_final"}
    assert parents["kafka/profiles"] == set()
    clicks = {"kafka/profiles", "kafka/searches", "kafka/clicks"}
    assert parents["tables/clicks_enriched"] == clicks
    assert parents["tables/clicks_per_zip"] == clicks
    assert parents["tables/clicks_last_search"] == {"kafka/searches", "kafka/clicks"}
    # A stream written to a topic and read from it: searches -> searches_by_term -> counts.
    assert parents["tables/searches_by_term"] == {"kafka/searches"}
    assert parents["kafka/searches_by_term"] == {"tables/searches_by_term"}
    assert parents["tables/search_counts"] == {"kafka/searches_by_term"}
    assert parents["kafka/large_trades"] == {"tables/large_trades"}
    assert parents["tables/click_sessions"] == {"kafka/clicks"}
