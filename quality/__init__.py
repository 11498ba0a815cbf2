"""Data quality for compacted tables: per-table suites, old-vs-new comparison, Data Docs.

Importing this package is cheap and has no side effects: each public name below is imported
from its module on first use (Spark's Python workers import ``quality.spark_types`` through the
authoring API, and need none of the comparison's pydantic models), Great Expectations and
pyspark only when a validation or comparison runs, and no SparkSession or GE context is created
here.

Declare a table (next to the pipeline)::

    CUSTOMERS = TableSpec("customers", key="customer_id", schema={...}, rules=(...))

Validate a snapshot, compare a candidate with the live version::

    validation = validate_table(df, CUSTOMERS, docs_dir="/tmp/docs")
    result = compare_tables(live_df, candidate_df, "customer_id", ComparisonPolicy())
    print(result.render_text())
"""

from __future__ import annotations

import importlib
from typing import Any

# Each public name and the module that defines it.
_HOMES = {
    "compare_tables": "quality.compare",
    "schema_diff": "quality.compare",
    "ColumnMatch": "quality.comparison",
    "ComparisonResult": "quality.comparison",
    "KeyCoverage": "quality.comparison",
    "MismatchRow": "quality.comparison",
    "NumericShift": "quality.comparison",
    "SchemaDiff": "quality.comparison",
    "TypeChange": "quality.comparison",
    "ValueDiff": "quality.comparison",
    "DataDocsLinks": "quality.data_docs",
    "build_data_docs": "quality.data_docs",
    "QualityError": "quality.errors",
    "ResultFileError": "quality.errors",
    "SpecError": "quality.errors",
    "ExpectationOutcome": "quality.outcomes",
    "TableValidation": "quality.outcomes",
    "ISO_3166_ALPHA2": "quality.reference",
    "load_result": "quality.report",
    "render": "quality.report",
    "render_comparison": "quality.rendering",
    "render_validation": "quality.rendering",
    "save_result": "quality.report",
    "Between": "quality.rules",
    "ComparisonPolicy": "quality.rules",
    "InSet": "quality.rules",
    "MatchesRegex": "quality.rules",
    "NotInFuture": "quality.rules",
    "NotNull": "quality.rules",
    "Rule": "quality.rules",
    "SumNonNegative": "quality.rules",
    "TableSpec": "quality.rules",
    "build_suite": "quality.suites",
    "table_checks": "quality.suites",
    "validate_table": "quality.suites",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
