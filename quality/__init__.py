"""Data quality for compacted tables: per-table suites, old-vs-new comparison, Data Docs.

Importing this package is cheap and has no side effects: Great Expectations and pyspark are
imported only when a validation or comparison runs, and no SparkSession or GE context is
created here.

Declare a table (next to the pipeline)::

    CUSTOMERS = TableSpec("customers", key="customer_id", schema={...}, rules=(...))

Validate a snapshot, compare a candidate with the live version::

    validation = validate_table(df, CUSTOMERS, docs_dir="/tmp/docs")
    result = compare_tables(live_df, candidate_df, "customer_id", ComparisonPolicy())
    print(result.render_text())
"""

from quality.compare import compare_tables, schema_diff
from quality.comparison import (
    ColumnMatch,
    ComparisonResult,
    KeyCoverage,
    MismatchRow,
    NumericShift,
    SchemaDiff,
    TypeChange,
    ValueDiff,
)
from quality.data_docs import DataDocsLinks, build_data_docs
from quality.errors import QualityError, ResultFileError, SpecError
from quality.outcomes import ExpectationOutcome, TableValidation
from quality.reference import ISO_3166_ALPHA2
from quality.report import (
    load_result,
    render,
    render_comparison,
    render_validation,
    save_result,
)
from quality.rules import (
    Between,
    ComparisonPolicy,
    InSet,
    MatchesRegex,
    NotInFuture,
    NotNull,
    Rule,
    SumNonNegative,
    TableSpec,
)
from quality.suites import build_suite, table_checks, validate_table

__all__ = [
    "ISO_3166_ALPHA2",
    "Between",
    "ColumnMatch",
    "ComparisonPolicy",
    "ComparisonResult",
    "DataDocsLinks",
    "ExpectationOutcome",
    "InSet",
    "KeyCoverage",
    "MatchesRegex",
    "MismatchRow",
    "NotInFuture",
    "NotNull",
    "NumericShift",
    "QualityError",
    "ResultFileError",
    "Rule",
    "SchemaDiff",
    "SpecError",
    "SumNonNegative",
    "TableSpec",
    "TableValidation",
    "TypeChange",
    "ValueDiff",
    "build_data_docs",
    "build_suite",
    "compare_tables",
    "load_result",
    "render",
    "render_comparison",
    "render_validation",
    "save_result",
    "schema_diff",
    "table_checks",
    "validate_table",
]
