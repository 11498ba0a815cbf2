"""Old-vs-new comparison of two versions of one table, judged by Great Expectations.

Both versions are joined per key into a diff frame (:mod:`quality.diff_frame`), which is
cached once (uncompressed) and then read by one aggregate pass (coverage, duplicates, match
counts, distributions), by the GE validation (the verdict and its evidence; see
:func:`quality.gx_runner.run_checks`) and, only when there is something to show, by two small
ordered takes (example keys, top mismatching keys). Great Expectations is imported in the
background while the join runs.

The checks and the wording of failures are in :mod:`quality.diff_checks`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from quality.caching import cache_uncompressed
from quality.comparison import ColumnMatch, ComparisonResult, KeyCoverage, SchemaDiff, TypeChange
from quality.composite_key import one_key_column
from quality.diff_checks import diff_checks, exact_type_failures, failure_reasons
from quality.diff_frame import (
    DiffPlan,
    aggregate,
    build_diff_frame,
    distributions,
    example_keys,
    top_mismatches,
)
from quality.gx_runner import import_in_background, run_checks
from quality.rules import ComparisonPolicy
from quality.spark_types import is_numeric

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

logger = logging.getLogger(__name__)


def _types(df: DataFrame, ignore: frozenset[str]) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in df.schema.fields if f.name not in ignore}


def _lap(phase: str, since: float) -> float:
    now = time.perf_counter()
    logger.debug("compare_tables: %s took %.2f s", phase, now - since)
    return now


def schema_diff(old: DataFrame, new: DataFrame, policy: ComparisonPolicy) -> SchemaDiff:
    """Columns added, removed and retyped between two DataFrames (ignored columns left out)."""
    old_types, new_types = _types(old, policy.ignore_columns), _types(new, policy.ignore_columns)
    return SchemaDiff(
        added=tuple(c for c in new_types if c not in old_types),
        removed=tuple(c for c in old_types if c not in new_types),
        type_changed=tuple(
            TypeChange(column=c, old_type=old_types[c], new_type=new_types[c])
            for c in old_types
            if c in new_types and old_types[c] != new_types[c]
        ),
    )


def _plan(old: DataFrame, new: DataFrame, key: str, policy: ComparisonPolicy) -> DiffPlan:
    skip = policy.ignore_columns | {key}
    old_types, new_types = _types(old, skip), _types(new, skip)
    shared = [c for c in old_types if c in new_types]
    return DiffPlan(
        key=key,
        old_columns=tuple(old_types),
        new_columns=tuple(new_types),
        compared=tuple(c for c in shared if old_types[c] == new_types[c]),
        numeric=tuple(c for c in shared if is_numeric(old_types[c]) and is_numeric(new_types[c])),
        dropped_keys=policy.expected_dropped_keys,
        added_keys=policy.expected_added_keys,
    )


def compare_tables(
    old: DataFrame,
    new: DataFrame,
    key: str | Sequence[str],
    policy: ComparisonPolicy | None = None,
    *,
    table: str = "table",
    old_name: str = "old",
    new_name: str = "new",
    top_n: int = 10,
    docs_dir: str | Path | None = None,
) -> ComparisonResult:
    """Compare two versions of a table keyed by ``key`` and judge the new one.

    Args:
        old: the live version's snapshot; ``new``: the candidate's.
        key: the key column (null keys compare equal to each other), or the columns of a
            composite key (compared as one JSON column; see :mod:`quality.composite_key`).
        policy: thresholds and declared changes; :class:`ComparisonPolicy` defaults when None.
        table: the table's name (GE suite and report name).
        old_name: label of the old version in messages (e.g. ``"v1"``); likewise ``new_name``.
        top_n: how many mismatching keys to return.
        docs_dir: also store the GE run in a file project there and build its Data Docs.

    Returns:
        The verdict, its reasons, the statistics and the GE evidence.

    Raises:
        QualityError: a key column is missing from a version.
    """
    started = time.perf_counter()
    policy = policy or ComparisonPolicy()
    old, new, key = one_key_column(old, new, key)
    plan = _plan(old, new, key, policy)
    schema = schema_diff(old, new, policy)
    diff = cache_uncompressed(build_diff_frame(old, new, plan))
    try:
        loading = import_in_background()
        stats = aggregate(diff, plan)  # joins, caches and aggregates: the longest Spark job
        loading.join()
        mark = _lap("join, cache and aggregate", started)
        run = run_checks(
            diff,
            diff_checks(plan, policy, _types(old, policy.ignore_columns)),
            suite_name=f"{table}.diff",
            key_column=key,
            docs_dir=docs_dir,
        )
        mark = _lap("great expectations", mark)
        one_sided = stats["only_old"] + stats["only_new"]
        examples = example_keys(diff, key) if one_sided else {"only_old": (), "only_new": ()}
        differing = any(stats[f"match_{i}"] < stats["in_both"] for i in range(len(plan.compared)))
        mismatches = (
            top_mismatches(diff, plan, policy.expected_changed_columns, top_n) if differing else ()
        )
        _lap("examples", mark)
    finally:
        diff.unpersist()
    counts = {name: int(stats[name]) for name in KeyCoverage.model_fields if name in stats}
    coverage = KeyCoverage(
        **counts,
        only_old_examples=examples["only_old"],
        only_new_examples=examples["only_new"],
    )
    by_name = {o.name: o for o in run.outcomes}
    columns = tuple(
        ColumnMatch(
            column=c,
            compared=coverage.in_both,
            matched=int(stats[f"match_{i}"]),
            expected_change=c in policy.expected_changed_columns,
            passed=by_name[f"match({c})"].success if f"match({c})" in by_name else False,
        )
        for i, c in enumerate(plan.compared)
    )
    outcomes = run.outcomes + exact_type_failures(schema, policy, key)
    result = ComparisonResult(
        table=table,
        key=key,
        old_name=old_name,
        new_name=new_name,
        passed=run.success and all(o.success for o in outcomes),
        failures=(),
        schema_diff=schema,
        coverage=coverage,
        columns=columns,
        distributions=distributions(stats, plan),
        mismatches=mismatches,
        outcomes=outcomes,
        policy=policy,
        compared_at=run.run_time,
        elapsed_s=time.perf_counter() - started,
        docs_index=run.docs.index if run.docs else None,
        docs_page=run.docs.page if run.docs else None,
    )
    return result.model_copy(update={"failures": failure_reasons(result, outcomes)})
