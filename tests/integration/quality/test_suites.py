"""Per-table suites catch injected defects, with GE's numbers as evidence.

Each defect is validated twice, as a Spark DataFrame (checked on Spark) and as the Arrow table
of the same rows (checked with pandas in the test's process): the same assertions hold for both.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.customer_spend import PIPELINE as CUSTOMER_SPEND_PIPELINE
from pipelines.customers import PIPELINE as CUSTOMERS_PIPELINE
from pipelines.spend_hourly import PIPELINE as SPEND_HOURLY
from quality import (
    NotInFuture,
    TableSpec,
    build_data_docs,
    build_suite,
    load_result,
    render_validation,
    save_result,
    validate_table,
)
from tests.integration.quality.testdata import N_KEYS, NOW_MS, key_of

pytestmark = pytest.mark.integration

CUSTOMERS = CUSTOMERS_PIPELINE.quality_spec
CUSTOMER_SPEND = CUSTOMER_SPEND_PIPELINE.quality_spec

NULL_KEY_ROW = 17
BAD_COUNTRIES = {3: "XX", 4_242: "usa", 9_999: "ZZ"}

Form = Callable[[DataFrame], Any]


@pytest.fixture(params=["spark", "arrow"])
def form(request: pytest.FixtureRequest) -> Form:
    """How the snapshot reaches the suite: a Spark DataFrame, or its rows as an Arrow table."""
    if request.param == "spark":
        return lambda df: df
    return lambda df: df.toArrow()


def test_suite_catches_a_null_key_and_bad_country_codes(customers: DataFrame, form: Form) -> None:
    country = F.col("country")
    for row, code in BAD_COUNTRIES.items():
        country = F.when(F.col("offset") == row, F.lit(code)).otherwise(country)
    broken = customers.withColumn("country", country).withColumn(
        "customer_id",
        F.when(F.col("offset") == NULL_KEY_ROW, F.lit(None)).otherwise(F.col("customer_id")),
    )

    result = validate_table(form(broken), CUSTOMERS, now_ms=NOW_MS)

    assert not result.success
    assert result.row_count == N_KEYS
    null_key = result.outcome("not_null(customer_id)")
    assert (null_key.success, null_key.unexpected_count, null_key.element_count) == (
        False,
        1,
        N_KEYS,
    )
    assert null_key.unexpected_percent == pytest.approx(100 / N_KEYS)
    bad_country = result.outcome("in_set(country)")
    assert not bad_country.success
    assert bad_country.unexpected_count == len(BAD_COUNTRIES)
    assert set(bad_country.unexpected_examples) == set(BAD_COUNTRIES.values())
    assert set(bad_country.unexpected_keys) == {key_of(row) for row in BAD_COUNTRIES}
    failed = {o.name for o in result.outcomes if not o.success}
    assert failed == {"not_null(customer_id)", "in_set(country)"}
    assert result.outcome("unique(customer_id)").unexpected_count == 0
    assert len(result.failures) == 2
    assert "3 of 10000 values unexpected" in result.failures[1]

    metadata = result.to_metadata()
    assert metadata["in_set(country).unexpected_count"] == 3
    assert metadata["success"] is False
    assert all(isinstance(v, str | int | float | bool) for v in metadata.values())


def test_clean_table_passes_and_builds_data_docs(
    customers: DataFrame, form: Form, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    snapshot = form(customers)

    # Two suites at once into one new GE project, as the engine runs them for several runs.
    with ThreadPoolExecutor(2) as pool:
        result, other = pool.map(
            lambda _: validate_table(snapshot, CUSTOMERS, now_ms=NOW_MS, docs_dir=docs), range(2)
        )

    assert result.success, result.failures
    assert other.success, other.failures
    assert result.outcome("not_in_future(updated_at)").unexpected_count == 0
    assert result.outcome("columns").observed_value == sorted(CUSTOMERS.schema)
    assert result.docs_index and Path(result.docs_index).is_file()
    assert result.docs_page and Path(result.docs_page).is_file()
    assert Path(result.docs_page).is_relative_to(docs)
    assert "customers" in Path(result.docs_page).read_text(encoding="utf-8")
    assert build_data_docs(docs).index == result.docs_index

    saved = save_result(tmp_path / "results" / "customers.json", result)
    assert load_result(saved) == result
    text = render_validation(result)
    assert "Table customers: PASSED (0 of 14 checks failed)" in text
    assert "in_set(country)" in text


def not_in_future(spec: TableSpec) -> NotInFuture:
    (rule,) = (r for r in spec.rules if isinstance(r, NotInFuture))
    return rule


def test_time_rule_and_exact_decimal_type(spark: SparkSession, form: Form) -> None:
    late_row, too_late = 999, NOW_MS + not_in_future(CUSTOMER_SPEND).tolerance_ms + 1
    df = spark.range(1_000).selectExpr(
        "format_string('c%05d', id) AS customer_id",
        "id + 1 AS txn_count",
        "cast(id - 100 AS decimal(10,2)) AS total_amount",
        f"if(id = {late_row}, {too_late}, 1700000000000 + id) AS last_txn_ts",
    )

    result = validate_table(form(df), CUSTOMER_SPEND, now_ms=NOW_MS)

    assert not result.success
    exact = result.outcome("spark_type(total_amount)")
    assert (exact.success, exact.observed_value, exact.source) == (
        False,
        "decimal(10,2)",
        "spark_schema",
    )
    assert result.outcome("type(total_amount)").success  # GE sees a DecimalType: right class
    total = result.outcome("sum_non_negative(total_amount)")
    assert total.success and total.observed_value == pytest.approx(sum(range(1_000)) - 100_000)
    late = result.outcome("not_in_future(last_txn_ts)")
    assert (late.success, late.unexpected_count, late.unexpected_keys) == (
        False,
        1,
        (key_of(late_row),),
    )
    failed = {o.name for o in result.outcomes if not o.success}
    assert failed == {"spark_type(total_amount)", "not_in_future(last_txn_ts)"}


def test_build_suite_gives_ge_the_spec() -> None:
    suite = build_suite(CUSTOMERS, now_ms=NOW_MS)

    assert suite.name == "customers"
    types = [e.expectation_type for e in suite.expectations]
    assert len(types) == 3 + len(CUSTOMERS.schema) + len(CUSTOMERS.rules)
    assert types[:3] == [
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_unique",
        "expect_table_columns_to_match_set",
    ]
    future, rule = suite.expectations[-1], not_in_future(CUSTOMERS)
    assert (future.column, future.max_value) == ("updated_at", NOW_MS + rule.tolerance_ms)


def test_a_composite_key_must_be_unique_as_a_whole_and_each_part_not_null(
    spark: SparkSession, form: Form
) -> None:
    spec = SPEND_HOURLY.quality_spec  # derived from the plan: key (customer_id, window_start)
    rows = [
        ("c1", 0, 1, Decimal("5.00"), Decimal("5.00")),
        ("c1", 3_600_000, 2, Decimal("7.50"), Decimal("5.00")),  # same customer, next hour
        ("c2", 0, 1, Decimal("1.00"), Decimal("1.00")),
        ("c2", 0, 1, Decimal("2.00"), Decimal("2.00")),  # the key (c2, 0) twice
        (None, 0, 1, Decimal("3.00"), Decimal("3.00")),
    ]
    schema = ", ".join(f"{c} {t}" for c, t in spec.schema.items())
    result = validate_table(form(spark.createDataFrame(rows, schema)), spec, now_ms=NOW_MS)

    assert not result.success
    unique = result.outcome("unique(customer_id, window_start)")
    assert (unique.success, unique.unexpected_count) == (False, 2)
    assert set(unique.unexpected_keys) == {'{"customer_id":"c2","window_start":0}'}
    null = result.outcome("not_null(customer_id)")
    assert (null.success, null.unexpected_count) == (False, 1)
    assert result.outcome("not_null(window_start)").success
    failed = {o.name for o in result.outcomes if not o.success}
    assert failed == {"unique(customer_id, window_start)", "not_null(customer_id)"}
