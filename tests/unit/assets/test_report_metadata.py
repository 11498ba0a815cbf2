"""A deployment's report as Dagster metadata: what is plotted, what is plain, what is a path."""

from __future__ import annotations

from dagster import FloatMetadataValue, IntMetadataValue, PathMetadataValue, TextMetadataValue

from assets.relay import metadata_values
from streaming.run.pipes_reporter import snapshot_metadata
from streaming.run.reporting import Snapshot

# The series worth watching over time; Dagster plots every int and float entry.
PLOTTED = {
    "total_lag",
    "input_rows_per_s",
    "processed_rows_per_s",
    "last_batch_duration_s",
    "dagster/row_count",
    "catch_up_pct",
    "behind_live",
}
TOTALS = {
    "batches": "412",
    "records_processed": "1250000",
    "dead_lettered_total": "7",
    "dead_lettered_run": "3",
    "uptime_s": "3601",
    "table_version": "415",
}


def _candidate_report(**changes: object) -> Snapshot:
    fields = {
        "pipeline": "customers",
        "version": "v2",
        "deployment": "customers__v2",
        "fingerprint": "abc123",
        "state": "catching_up",
        "committed_offsets": {"customers": {"0": 10, "1": 12}},
        "latest_offsets": {"customers": {"0": 20, "1": 22}},
        "lag": {"customers": {"0": 10, "1": 10}},
        "total_lag": 20,
        "batches": 412,
        "records_processed": 1_250_000,
        "input_rows_per_s": 1234.56,
        "processed_rows_per_s": 2345.67,
        "last_batch_duration_s": 0.8123,
        "last_batch_at": 1000.0,
        "table_rows": 980,
        "table_version": 415,
        "table_path": "/home/kappa/tables/customers__v2",
        "dead_lettered_total": 7,
        "dead_lettered_run": 3,
        "duration_s": 3600.6,
        "role": "candidate",
        "live_version": "v1",
        "behind_live": 4100,
        "catch_up_pct": 63.0,
        "catch_up_eta_s": 41.4,
    }
    return Snapshot(**{**fields, **changes})


def test_only_rates_lag_duration_rows_and_catch_up_are_plotted():
    metadata = metadata_values(snapshot_metadata(_candidate_report()))
    numbers = {
        k for k, v in metadata.items() if isinstance(v, IntMetadataValue | FloatMetadataValue)
    }
    assert numbers == PLOTTED
    assert metadata["catch_up_pct"].value == 63.0 and metadata["behind_live"].value == 4100
    assert metadata["processed_rows_per_s"].value == 2345.7


def test_totals_are_plain_values_and_the_table_is_a_path():
    metadata = metadata_values(snapshot_metadata(_candidate_report()))
    for label, text in TOTALS.items():
        assert metadata[label] == TextMetadataValue(text), label
    assert metadata["table_path"] == PathMetadataValue("/home/kappa/tables/customers__v2")
    assert metadata["role"].value == "candidate" and metadata["live_version"].value == "v1"
    assert metadata["catch_up_eta_s"].value == "41"
    assert metadata["committed_offsets"].value == {"customers": {"0": 10, "1": 12}}


def test_a_version_that_is_not_behind_reports_no_catch_up():
    live = _candidate_report(
        role="live", live_version="", behind_live=None, catch_up_pct=None, catch_up_eta_s=None
    )
    metadata = metadata_values(snapshot_metadata(live))
    assert not {"catch_up_pct", "behind_live", "catch_up_eta_s", "live_version"} & set(metadata)
    unknown = metadata_values(snapshot_metadata(_candidate_report(catch_up_eta_s=None)))
    assert unknown["catch_up_eta_s"].value == "unknown"
