"""Per-table expectation suites built from a :class:`~quality.rules.TableSpec`, and running them.

A table's suite checks: the key is non-null (but for the columns declared nullable) and
unique; the columns are exactly the spec's; each column has the spec's type; and every domain
rule. Great Expectations checks Spark types by class (``DecimalType``), so for parametrised
types (decimal precision and scale, element types) the exact type is also compared with the
DataFrame's schema and reported as an outcome whose ``source`` is ``"spark_schema"``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from quality.caching import cache_uncompressed
from quality.gx_runner import Check, expectation_suite, run_checks
from quality.outcomes import ExpectationOutcome, TableValidation, spark_type_outcome
from quality.rules import TableSpec
from quality.spark_types import gx_type_class, is_parametrised

if TYPE_CHECKING:
    from great_expectations import ExpectationSuite
    from pyspark.sql import DataFrame


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def table_checks(spec: TableSpec, now_ms: int) -> list[Check]:
    """The checks of a table's suite, in report order.

    Args:
        spec: the table's declared key, schema and rules.
        now_ms: "now" for time-relative rules, epoch milliseconds.
    """
    columns = ", ".join(spec.schema)
    checks = [
        Check(
            f"not_null({key})",
            f"key {key} not null",
            "ExpectColumnValuesToNotBeNull",
            {"column": key},
        )
        for key in spec.keys
        if key not in spec.nullable_keys
    ]
    key = ", ".join(spec.keys)
    if len(spec.keys) == 1:
        unique = ("ExpectColumnValuesToBeUnique", {"column": key})
    else:
        unique = ("ExpectCompoundColumnsToBeUnique", {"column_list": list(spec.keys)})
    checks += [
        Check(f"unique({key})", f"key {key} unique", *unique),
        Check(
            "columns",
            f"columns are exactly {columns}",
            "ExpectTableColumnsToMatchSet",
            {"column_set": list(spec.schema), "exact_match": True},
        ),
    ]
    for column, type_ in spec.schema.items():
        class_name = gx_type_class(type_)
        checks.append(
            Check(
                f"type({column})",
                f"{column} is {class_name} ({type_})",
                "ExpectColumnValuesToBeOfType",
                {"column": column, "type_": class_name},
            )
        )
    seen: dict[str, int] = {}
    for rule in spec.rules:
        base = f"{_snake(type(rule).__name__)}({rule.column})"
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base}#{seen[base]}"
        expectation, kwargs = rule.expectation(now_ms)
        checks.append(Check(name, rule.describe(), expectation, kwargs))
    return checks


def build_suite(spec: TableSpec, now_ms: int | None = None) -> ExpectationSuite:
    """The spec as a GE ``ExpectationSuite`` (for users who run GE themselves).

    Args:
        spec: the table's declared key, schema and rules.
        now_ms: "now" for time-relative rules; the current time when None.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return expectation_suite(spec.name, table_checks(spec, now))


def exact_type_outcomes(df: DataFrame, spec: TableSpec) -> tuple[ExpectationOutcome, ...]:
    """Exact-type checks of parametrised columns (GE only checks their class)."""
    actual = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    outcomes = []
    for column, type_ in spec.schema.items():
        if column not in actual or not is_parametrised(type_):
            continue
        outcomes.append(
            spark_type_outcome(column, type_, actual[column], f"{column} is exactly {type_}")
        )
    return tuple(outcomes)


def validate_table(
    spark_df: DataFrame,
    spec: TableSpec,
    now_ms: int | None = None,
    docs_dir: str | Path | None = None,
) -> TableValidation:
    """Validate a table snapshot against its spec with Great Expectations.

    Args:
        spark_df: the table snapshot (``streaming.delta.table_reader.read_spark``, which
            applies deletion vectors).
        spec: the table's declared key, schema and rules.
        now_ms: "now" for time-relative rules (epoch ms); the current time when None. Pass it
            for reproducible results.
        docs_dir: also store the run in a file GE project there and build its Data Docs.

    Returns:
        The verdict with per-expectation evidence.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    owned = not spark_df.is_cached
    df = cache_uncompressed(spark_df) if owned else spark_df
    try:
        run = run_checks(
            df,
            table_checks(spec, now),
            suite_name=spec.name,
            key_column=spec.keys,
            docs_dir=docs_dir,
        )
        extra = exact_type_outcomes(df, spec)
        counted = [o.element_count for o in run.outcomes if o.element_count is not None]
        row_count = counted[0] if counted else df.count()
    finally:
        if owned:
            df.unpersist()
    outcomes = run.outcomes + extra
    return TableValidation(
        table=spec.name,
        success=run.success and all(o.success for o in extra),
        row_count=int(row_count),
        now_ms=now,
        validated_at=run.run_time,
        suite_name=spec.name,
        outcomes=outcomes,
        docs_index=run.docs.index if run.docs else None,
        docs_page=run.docs.page if run.docs else None,
    )
