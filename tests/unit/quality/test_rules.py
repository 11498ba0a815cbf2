"""Rules, specs and policies: declared without Spark or Great Expectations."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

import pytest

from quality import (
    ISO_3166_ALPHA2,
    Between,
    ComparisonPolicy,
    InSet,
    MatchesRegex,
    NotInFuture,
    NotNull,
    SpecError,
    SumNonNegative,
    TableSpec,
    table_checks,
)
from quality.formatting import pct
from quality.spark_types import gx_type_class, is_numeric, normalize_type


def test_importing_quality_loads_neither_spark_nor_great_expectations() -> None:
    code = (
        "import sys, quality; "
        "loaded = [m for m in sys.modules if m.split('.')[0] in "
        "('pyspark', 'great_expectations', 'deltalake')]; "
        "print(','.join(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize(
    ("declared", "canonical", "gx_class"),
    [
        ("string", "string", "StringType"),
        ("long", "bigint", "LongType"),
        ("BIGINT", "bigint", "LongType"),
        ("integer", "int", "IntegerType"),
        ("decimal(18, 2)", "decimal(18,2)", "DecimalType"),
        ("decimal", "decimal(10,0)", "DecimalType"),
        ("array<string>", "array<string>", "ArrayType"),
    ],
)
def test_spark_types_are_normalised_to_spark_spelling(
    declared: str, canonical: str, gx_class: str
) -> None:
    assert normalize_type(declared) == canonical
    assert gx_type_class(declared) == gx_class


def test_unknown_type_is_rejected_with_the_accepted_spellings() -> None:
    with pytest.raises(SpecError, match="decimal\\(18,2\\)"):
        normalize_type("varchar2")
    assert is_numeric("decimal(18,2)") and is_numeric("int") and not is_numeric("string")


def test_rules_map_to_great_expectations_expectations() -> None:
    now = 1_000_000
    assert NotInFuture("ts", tolerance_ms=500).expectation(now) == (
        "ExpectColumnValuesToBeBetween",
        {"column": "ts", "max_value": 1_000_500},
    )
    assert MatchesRegex("email", "@", mostly=0.99).expectation(now)[1]["mostly"] == 0.99
    assert InSet("c", ["DE", "FR", "DE"]).values == ("DE", "FR")
    assert Between("n", min_value=0).expectation(now)[1]["max_value"] is None
    assert SumNonNegative("amount").expectation(now) == (
        "ExpectColumnSumToBeBetween",
        {"column": "amount", "min_value": 0},
    )
    assert len(ISO_3166_ALPHA2) == 249 and "DE" in ISO_3166_ALPHA2 and "XX" not in ISO_3166_ALPHA2


def test_country_codes_are_those_of_the_tz_database() -> None:
    """The IANA tz database's iso3166.tab (the ``tzdata`` package, a pandas dependency) lists the
    assigned ISO 3166-1 alpha-2 codes; the hand-typed set must be exactly those."""
    tzdata = pytest.importorskip("tzdata")
    text = (resources.files(tzdata) / "zoneinfo" / "iso3166.tab").read_text(encoding="utf-8")
    codes = {line.split("\t", 1)[0] for line in text.splitlines() if line[:1].isalpha()}
    assert frozenset(codes) == ISO_3166_ALPHA2


@pytest.mark.parametrize(
    "make",
    [
        lambda: NotNull("a", mostly=0.0),
        lambda: InSet("a", []),
        lambda: Between("a"),
        lambda: NotInFuture("a", tolerance_ms=-1),
        lambda: TableSpec("t", key="missing", schema={"a": "string"}),
        lambda: TableSpec("t", key="a", schema={"a": "string"}, rules=(NotNull("b"),)),
        lambda: ComparisonPolicy(min_column_match=1.5),
    ],
)
def test_invalid_declarations_fail_when_declared(make: object) -> None:
    with pytest.raises(SpecError):
        make()  # type: ignore[operator]


def test_table_spec_checks_key_schema_and_rules_in_order() -> None:
    spec = TableSpec(
        "spend",
        key="customer_id",
        schema={"customer_id": "string", "total_amount": "decimal(18,2)", "n": "long"},
        rules=(Between("n", 1, None), Between("n", None, 10), SumNonNegative("total_amount")),
    )
    assert spec.schema["n"] == "bigint"
    names = [c.name for c in table_checks(spec, now_ms=0)]
    assert names == [
        "not_null(customer_id)",
        "unique(customer_id)",
        "columns",
        "type(customer_id)",
        "type(total_amount)",
        "type(n)",
        "between(n)",
        "between(n)#2",
        "sum_non_negative(total_amount)",
    ]


def test_policy_accepts_any_iterable_and_round_trips() -> None:
    policy = ComparisonPolicy(expected_changed_columns=["email"], expected_dropped_keys={1, 2})
    assert policy.expected_changed_columns == frozenset({"email"})
    assert policy.expected_dropped_keys == frozenset({"1", "2"})
    assert policy.ignore_columns == frozenset({"partition", "offset"})
    assert ComparisonPolicy.from_dict(policy.to_dict()) == policy


def test_percentages_never_round_a_failure_up_to_the_threshold() -> None:
    assert pct(0.95) == "95.0%"
    assert pct(0.9995) == "99.95%"
    assert pct(0.99999) == "99.999%"
    assert pct(1.0) == "100.0%"
    assert pct(None) == "n/a"
