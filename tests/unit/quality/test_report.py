"""Reports, result files and failure wording, on hand-made results (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quality import (
    ColumnMatch,
    ComparisonPolicy,
    ComparisonResult,
    ExpectationOutcome,
    KeyCoverage,
    MismatchRow,
    NumericShift,
    ResultFileError,
    SchemaDiff,
    TableValidation,
    TypeChange,
    ValueDiff,
    load_result,
    render,
    save_result,
)
from quality.diff_checks import exact_type_failures, failure_reasons


def comparison(**changes: object) -> ComparisonResult:
    values: dict[str, object] = {
        "table": "customer_spend",
        "key": "customer_id",
        "old_name": "v1",
        "new_name": "v2",
        "passed": False,
        "failures": ("column total_amount changed type decimal(18,2) -> decimal(10,2)",),
        "schema_diff": SchemaDiff(
            added=("segment",),
            type_changed=(
                TypeChange(
                    column="total_amount", old_type="decimal(18,2)", new_type="decimal(10,2)"
                ),
            ),
        ),
        "coverage": KeyCoverage(
            old_rows=1_000,
            new_rows=1_001,
            old_keys=1_000,
            new_keys=1_000,
            in_both=1_000,
            only_old=0,
            only_new=0,
            new_duplicate_keys=1,
            new_duplicate_rows=1,
        ),
        "columns": (
            ColumnMatch(
                column="txn_count", compared=1_000, matched=990, expected_change=False, passed=False
            ),
        ),
        "distributions": (
            NumericShift(
                column="txn_count",
                old_mean=5.0,
                new_mean=5.5,
                old_p50=5.0,
                new_p50=5.0,
                old_p90=9.0,
                new_p90=10.0,
                old_p99=12.0,
                new_p99=14.0,
            ),
        ),
        "mismatches": (
            MismatchRow(key="c00001", diffs=(ValueDiff(column="txn_count", old=3, new=4),)),
        ),
        "outcomes": (
            ExpectationOutcome(
                name="match(txn_count)",
                expectation_type="expect_column_pair_values_to_be_equal",
                success=False,
                column="old__txn_count = new__txn_count",
                mostly=0.999,
                element_count=1_000,
                unexpected_count=10,
                unexpected_percent=1.0,
                missing_count=0,
                unexpected_examples=("3 -> 4",),
                unexpected_keys=("c00001",),
            ),
        ),
        "policy": ComparisonPolicy(expected_changed_columns={"segment"}),
        "compared_at": "2026-01-01T00:00:00+00:00",
        "elapsed_s": 1.25,
    }
    values.update(changes)
    return ComparisonResult(**values)  # type: ignore[arg-type]


def validation() -> TableValidation:
    outcome = ExpectationOutcome(
        name="in_set(country)",
        expectation_type="expect_column_values_to_be_in_set",
        success=False,
        column="country",
        description="country in set of 249 values",
        element_count=100,
        unexpected_count=2,
        unexpected_percent=2.0,
        missing_count=0,
        unexpected_examples=("XX", "ZZ"),
        unexpected_keys=("c1", "c2"),
    )
    return TableValidation(
        table="customers",
        success=False,
        row_count=100,
        now_ms=0,
        validated_at="2026-01-01T00:00:00+00:00",
        suite_name="customers",
        outcomes=(outcome,),
    )


@pytest.mark.parametrize("result", [comparison(), validation()], ids=["comparison", "table"])
def test_results_round_trip_through_json_files(result: object, tmp_path: Path) -> None:
    path = save_result(tmp_path / "nested" / "latest.json", result)  # type: ignore[arg-type]
    assert load_result(path) == result
    assert not list(path.parent.glob(".*.tmp"))


def test_a_comparison_file_written_before_the_models_still_loads(tmp_path: Path) -> None:
    path = save_result(tmp_path / "old.json", comparison())
    old = path.read_text().replace('"schema_diff"', '"schema"')  # the earlier field name
    path.write_text(old)
    assert load_result(path) == comparison()


def test_comparison_report_shows_sections_as_tables() -> None:
    text = render(comparison())
    assert text.startswith("Comparison customer_spend: v1 -> v2: FAILED")
    for expected in (
        "row count ratio (new/old): 1.001000",
        "duplicated keys",
        "added:        segment (declared)",
        "type changed: total_amount: decimal(18,2) -> decimal(10,2)",
        "txn_count      1000      10  99.0%  99.9%  FAIL",
        "Top 1 mismatching keys:",
        "Failures:",
    ):
        assert expected in text, expected


def test_validation_report_and_failure_reason_carry_the_numbers() -> None:
    result = validation()
    assert result.failures == (
        "country in set of 249 values: 2 of 100 values unexpected (2.0% failing); e.g. keys c1, c2",
    )
    text = render(result)
    assert "Table customers: FAILED (1 of 1 checks failed)" in text
    assert "in_set(country)  FAIL" in text


def test_result_file_errors_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="run the validation"):
        load_result(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ResultFileError, match="not valid JSON"):
        load_result(bad)
    bad.write_text('{"kind": "other", "version": 1}', encoding="utf-8")
    with pytest.raises(ResultFileError, match="not a quality result"):
        load_result(bad)


def test_type_changes_ge_cannot_see_fail_unless_declared() -> None:
    schema = SchemaDiff(
        type_changed=(
            TypeChange(
                column="total_amount", old_type="decimal(18,2)", new_type="decimal(10,2)"
            ),  # same GE class
            TypeChange(column="txn_count", old_type="bigint", new_type="string"),  # GE sees this
            TypeChange(
                column="customer_id", old_type="string", new_type="bigint"
            ),  # the key: not in GE's checks
        )
    )
    failed = exact_type_failures(schema, ComparisonPolicy(), key="customer_id")
    assert [o.name for o in failed] == ["spark_type(total_amount)", "spark_type(customer_id)"]
    declared = ComparisonPolicy(expected_changed_columns={"total_amount", "customer_id"})
    assert exact_type_failures(schema, declared, key="customer_id") == ()

    result = comparison(outcomes=failed[:1])
    assert failure_reasons(result, failed[:1]) == (
        "column total_amount changed type decimal(18,2) -> decimal(10,2); "
        "declare it in expected_changed_columns if intended",
    )
