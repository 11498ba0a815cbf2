"""Old-vs-new comparison: each kind of broken candidate is caught, declared changes pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from quality import ComparisonPolicy, compare_tables, load_result, save_result
from quality.comparison import GROUPS
from quality.gx_runner import EXAMPLES
from tests.integration.quality.testdata import N_KEYS, key_of

pytestmark = pytest.mark.integration

KEY = "customer_id"


def compare(old: DataFrame, new: DataFrame, policy: ComparisonPolicy | None = None):  # type: ignore[no-untyped-def]
    return compare_tables(
        old, new, KEY, policy, table="customers", old_name="v1", new_name="v2", top_n=5
    )


def with_changed_email(df: DataFrame, every: int) -> DataFrame:
    changed = F.concat(F.lit("changed"), F.col("offset"), F.lit("@example.org"))
    return df.withColumn(
        "email", F.when(F.col("offset") % every == 0, changed).otherwise(F.col("email"))
    )


def test_dropping_one_percent_of_keys_fails(customers: DataFrame) -> None:
    candidate = customers.filter(F.col("offset") % 100 != 3)

    result = compare(customers, candidate)

    assert not result.passed
    cov = result.coverage
    assert (cov.old_rows, cov.new_rows, cov.in_both, cov.only_old, cov.only_new) == (
        N_KEYS,
        N_KEYS - 100,
        N_KEYS - 100,
        100,
        0,
    )
    assert cov.row_count_ratio == pytest.approx(0.99)
    assert cov.only_old_examples == tuple(key_of(i) for i in (3, 103, 203, 303, 403))
    kept = result.outcome("old_keys_in_new")
    assert (kept.success, kept.unexpected_count, kept.checked_count) == (False, 100, N_KEYS)
    assert kept.pass_rate == pytest.approx(0.99)
    assert len(kept.unexpected_keys) == EXAMPLES
    assert set(kept.unexpected_keys) <= {key_of(i) for i in range(3, N_KEYS, 100)}
    assert all(c.match_rate == 1.0 for c in result.columns)
    assert result.failures == (result.failures[0],) and result.failures[0].startswith(
        "v2 lacks 100 of 10000 keys of v1 (1.0%), needs >= 99.9%"
    )


def test_changing_one_column_for_five_percent_of_keys_fails(
    customers: DataFrame, tmp_path: Path
) -> None:
    result = compare(customers, with_changed_email(customers, every=20))

    assert not result.passed
    email = result.column("email")
    assert (email.compared, email.mismatched, email.match_rate) == (N_KEYS, 500, 0.95)
    evidence = result.outcome("match(email)")
    assert (evidence.success, evidence.unexpected_count, evidence.element_count) == (
        False,
        500,
        N_KEYS,
    )
    assert evidence.unexpected_percent == pytest.approx(5.0)
    assert len(evidence.unexpected_keys) == EXAMPLES
    assert set(evidence.unexpected_keys) <= {key_of(i) for i in range(0, N_KEYS, 20)}
    assert [c.column for c in result.columns if c.match_rate < 1] == ["email"]
    assert result.failures == (
        "column email matches for 95.0% of keys (500 differ), needs >= 99.9%; e.g. keys "
        + ", ".join(evidence.unexpected_keys[:3]),
    )
    first = result.mismatches[0]
    assert first.key == key_of(0)
    assert [(d.column, d.old, d.new) for d in first.diffs] == [
        ("email", "user0@example.com", "changed0@example.org")
    ]
    assert [m.key for m in result.mismatches] == [key_of(i) for i in range(0, 100, 20)]
    shift = next(d for d in result.distributions if d.column == "updated_at")
    assert shift.old_mean == shift.new_mean == pytest.approx(1_700_000_000_000 + 4_999_500)

    text = result.render_text()
    assert "Comparison customers: v1 -> v2: FAILED" in text
    assert "email" in text and "95.0%" in text and "changed0@example.org" in text
    metadata = result.to_metadata()
    assert metadata["match_rate.email"] == 0.95
    assert metadata["match(email).unexpected_count"] == 500
    assert load_result(save_result(tmp_path / "diff.json", result)) == result
    groups = {o.name: o.group for o in result.outcomes}
    assert groups["columns"] == "schema" and groups["old_keys_in_new"] == "keys"
    assert groups["match(email)"] == "values" and set(groups.values()) == {*GROUPS}
    values = result.group_metadata("values")
    assert values["match_rate.email"] == 0.95 and values["expectation.match(email)"] == "FAILED"
    assert "schema.added" not in values and "keys.in_both" in result.group_metadata("keys")


def test_renamed_column_fails(customers: DataFrame) -> None:
    result = compare(customers, customers.withColumnRenamed("email", "email_address"))

    assert not result.passed
    assert (result.schema_diff.removed, result.schema_diff.added) == (
        ("email",),
        ("email_address",),
    )
    columns = result.outcome("columns")
    assert not columns.success
    assert columns.observed_value["missing"] == ["new__email"]
    assert columns.observed_value["unexpected"] == ["new__email_address"]
    assert "email" not in {c.column for c in result.columns}
    assert result.failures == (
        "schema: removed email; added email_address (a rename?); "
        "declare them in expected_changed_columns if intended",
    )


def test_duplicated_keys_fail(customers: DataFrame) -> None:
    duplicates = customers.filter(F.col("offset") % 500 == 0)  # 20 keys twice
    result = compare(customers, customers.unionByName(duplicates))

    assert not result.passed
    cov = result.coverage
    assert (cov.new_rows, cov.new_keys, cov.new_duplicate_keys, cov.new_duplicate_rows) == (
        N_KEYS + 20,
        N_KEYS,
        20,
        20,
    )
    assert cov.old_duplicate_keys == 0 and cov.in_both == N_KEYS
    unique = result.outcome("unique_new")
    assert (unique.success, unique.unexpected_count) == (False, 20)
    assert len(unique.unexpected_keys) == EXAMPLES
    assert set(unique.unexpected_keys) <= {key_of(i) for i in range(0, N_KEYS, 500)}
    assert result.outcome("unique_old").success
    assert result.failures[0].startswith(
        "v2 has 20 duplicated keys (20 extra rows): the table is not compacted"
    )


def test_declared_column_change_passes(customers: DataFrame, tmp_path: Path) -> None:
    candidate = with_changed_email(customers, every=20).withColumn(
        "offset",
        F.col("offset") + 1_000_000,  # ignored bookkeeping column
    )
    policy = ComparisonPolicy(expected_changed_columns={"email"})

    result = compare_tables(customers, candidate, KEY, policy, docs_dir=tmp_path / "docs")

    assert result.passed, result.failures
    assert result.failures == ()
    email = result.column("email")
    assert (email.match_rate, email.expected_change, email.passed) == (0.95, True, True)
    assert result.outcome("match(email)").unexpected_count == 500
    assert "offset" not in {c.column for c in result.columns}
    assert result.docs_page and Path(result.docs_page).is_file()
    assert result.docs_index and Path(result.docs_index).is_file()


def test_declared_dropped_keys_pass(customers: DataFrame) -> None:
    dropped = {key_of(i) for i in range(3, N_KEYS, 100)}
    candidate = customers.filter(~F.col(KEY).isin(sorted(dropped)))

    result = compare(customers, candidate, ComparisonPolicy(expected_dropped_keys=dropped))

    assert result.passed, result.failures
    cov = result.coverage
    assert (cov.only_old, cov.dropped_expected) == (100, 100)
    kept = result.outcome("old_keys_in_new")
    assert (kept.unexpected_count, kept.missing_count) == (0, 100)


def test_null_keys_match_each_other(spark: SparkSession) -> None:
    schema = "customer_id string, email string, partition int"
    old = spark.createDataFrame([("a", "x", 0), (None, "y", 0), ("b", "z", 0)], schema)
    new = spark.createDataFrame([("a", "x", 1), (None, "y2", 1), ("b", "z", 1)], schema)

    result = compare(old, new, ComparisonPolicy(min_column_match=0.5))

    assert result.passed, result.failures
    cov = result.coverage
    assert (cov.in_both, cov.only_old, cov.only_new) == (3, 0, 0)
    assert (result.column("email").matched, result.column("email").compared) == (2, 3)
    assert [(m.key, m.diffs[0].old, m.diffs[0].new) for m in result.mismatches] == [
        ("null", "y", "y2")
    ]
