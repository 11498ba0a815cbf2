"""Per-table expectation suites built from a :class:`~quality.rules.TableSpec`, and running them.

A table's suite checks: the key is non-null (but for the columns declared nullable) and
unique; the columns are exactly the spec's; each column has the spec's type; and every domain
rule. Great Expectations checks Spark types by class (``DecimalType``), so for parametrised
types (decimal precision and scale, element types) the exact type is also compared with the
DataFrame's schema and reported as an outcome whose ``source`` is ``"spark_schema"``.

A snapshot comes as a Spark DataFrame (validated on Spark's executors) or as an Arrow table
(validated with pandas in this process, for tables small enough that scheduling Spark jobs would
cost more than the checks). Both give the same outcomes: on the Arrow path GE checks the values,
and the column types (class and exact) are read from the snapshot's schema as Spark sees it.
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
    import pyarrow as pa
    from great_expectations import ExpectationSuite
    from pyspark.sql import DataFrame

TYPE_EXPECTATION = "ExpectColumnValuesToBeOfType"


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
                TYPE_EXPECTATION,
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


def exact_type_outcomes(actual: dict[str, str], spec: TableSpec) -> tuple[ExpectationOutcome, ...]:
    """Exact-type checks of parametrised columns (GE only checks their class).

    Args:
        actual: the snapshot's Spark types, ``simpleString`` by column.
        spec: the table's declared key, schema and rules.
    """
    outcomes = []
    for column, type_ in spec.schema.items():
        if column not in actual or not is_parametrised(type_):
            continue
        outcomes.append(
            spark_type_outcome(column, type_, actual[column], f"{column} is exactly {type_}")
        )
    return tuple(outcomes)


def class_outcome(check: Check, actual: dict[str, str]) -> ExpectationOutcome:
    """A type check judged on the schema, as GE reports it on Spark: the observed class name."""
    column = check.kwargs["column"]
    observed = gx_type_class(actual[column]) if column in actual else None
    return ExpectationOutcome(
        name=check.name,
        expectation_type="expect_column_values_to_be_of_type",
        success=observed == check.kwargs["type_"],
        column=column,
        description=check.description,
        observed_value=observed,
        error=None if column in actual else f"column {column} does not exist",
        source="spark_schema",
    )


def _is_arrow(data: DataFrame | pa.Table) -> bool:
    import pyarrow as pa

    return isinstance(data, pa.Table)


def spark_types(data: DataFrame | pa.Table) -> dict[str, str]:
    """The Spark type of each column, ``simpleString`` by name (an Arrow table's as Spark reads
    it)."""
    if _is_arrow(data):
        from pyspark.sql.pandas.types import from_arrow_type

        return {f.name: from_arrow_type(f.type).simpleString() for f in data.schema}
    return {f.name: f.dataType.simpleString() for f in data.schema.fields}


def validate_table(
    data: DataFrame | pa.Table,
    spec: TableSpec,
    now_ms: int | None = None,
    docs_dir: str | Path | None = None,
) -> TableValidation:
    """Validate a table snapshot against its spec with Great Expectations.

    Args:
        data: the table snapshot: a Spark DataFrame (``streaming.delta.table_reader.read_spark``,
            which applies deletion vectors), checked on Spark; or a ``pyarrow.Table``
            (``read_arrow``), checked with pandas in this process, for tables that fit in memory.
        spec: the table's declared key, schema and rules.
        now_ms: "now" for time-relative rules (epoch ms); the current time when None. Pass it
            for reproducible results.
        docs_dir: also store the run in a file GE project there and build its Data Docs.

    Returns:
        The verdict with per-expectation evidence, the same on either path.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    checks = table_checks(spec, now)
    actual = spark_types(data)
    if _is_arrow(data):
        # GE's pandas type check knows numpy dtypes, not Spark's classes: judge types on the
        # schema, which also holds for columns pandas widens (an integer column with nulls).
        values = [c for c in checks if c.expectation != TYPE_EXPECTATION]
        run = run_checks(
            data.to_pandas(),
            values,
            suite_name=spec.name,
            key_column=spec.keys,
            docs_dir=docs_dir,
        )
        typed = {
            c.name: class_outcome(c, actual) for c in checks if c.expectation == TYPE_EXPECTATION
        }
        judged = {o.name: o for o in run.outcomes} | typed
        outcomes = tuple(judged[c.name] for c in checks if c.name in judged)
        row_count = data.num_rows
    else:
        owned = not data.is_cached
        df = cache_uncompressed(data) if owned else data
        try:
            run = run_checks(
                df, checks, suite_name=spec.name, key_column=spec.keys, docs_dir=docs_dir
            )
            counted = [o.element_count for o in run.outcomes if o.element_count is not None]
            row_count = counted[0] if counted else df.count()
        finally:
            if owned:
                df.unpersist()
        outcomes = run.outcomes
    extra = exact_type_outcomes(actual, spec)
    outcomes += extra
    return TableValidation(
        table=spec.name,
        success=all(o.success for o in outcomes),
        row_count=int(row_count),
        now_ms=now,
        validated_at=run.run_time,
        suite_name=spec.name,
        outcomes=outcomes,
        docs_index=run.docs.index if run.docs else None,
        docs_page=run.docs.page if run.docs else None,
    )
