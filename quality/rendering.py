"""Quality results as plain text: a table validation, and an old-vs-new comparison (what
``kappa quality report`` and ``kappa diff`` print)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from quality.formatting import pct, show, table

if TYPE_CHECKING:
    from quality.comparison import ComparisonResult
    from quality.outcomes import TableValidation


def _verdict(ok: bool) -> str:
    return "PASSED" if ok else "FAILED"


def _failures(failures: tuple[str, ...]) -> list[str]:
    return ["Failures:", *(f"  - {f}" for f in failures)] if failures else []


def _docs(index: str | None, page: str | None) -> list[str]:
    lines = [f"Data Docs page:  {page}"] if page else []
    return [*lines, f"Data Docs index: {index}"] if index else lines


def render_validation(result: TableValidation) -> str:
    """A table validation as a header, a table of expectations and the failure reasons."""
    failed = sum(not o.success for o in result.outcomes)
    rows = []
    for o in result.outcomes:
        examples = ", ".join(o.unexpected_keys or o.unexpected_examples)
        rows.append(
            [
                o.name,
                "ok" if o.success else "FAIL",
                "" if o.unexpected_count is None else o.unexpected_count,
                "" if o.checked_count is None else o.checked_count,
                "" if o.pass_rate is None else pct(1.0 - o.pass_rate),
                "" if o.mostly is None else pct(o.mostly),
                examples or ("" if o.observed_value is None else show(o.observed_value)),
            ]
        )
    headers = ["check", "result", "unexpected", "checked", "failing", "needs", "examples"]
    lines = [
        f"Table {result.table}: {_verdict(result.success)} "
        f"({failed} of {len(result.outcomes)} checks failed)",
        f"rows {result.row_count}   validated at {result.validated_at}   now_ms {result.now_ms}",
        "",
        table(headers, rows),
    ]
    if result.failures:
        lines += ["", *_failures(result.failures)]
    return "\n".join(lines + _docs(result.docs_index, result.docs_page))


def _coverage(result: ComparisonResult) -> list[str]:
    cov = result.coverage
    ratio = "n/a" if cov.row_count_ratio is None else f"{cov.row_count_ratio:.6f}"
    rows = [
        ["rows", cov.old_rows, cov.new_rows],
        ["distinct keys", cov.old_keys, cov.new_keys],
        ["duplicated keys", cov.old_duplicate_keys, cov.new_duplicate_keys],
        ["extra duplicate rows", cov.old_duplicate_rows, cov.new_duplicate_rows],
    ]
    keys = [
        ["in both", cov.in_both, ""],
        ["only old", cov.only_old, ", ".join(cov.only_old_examples)],
        ["  of which declared dropped", cov.dropped_expected, ""],
        ["only new", cov.only_new, ", ".join(cov.only_new_examples)],
        ["  of which declared added", cov.added_expected, ""],
    ]
    return [
        table(["", result.old_name, result.new_name], rows),
        f"row count ratio (new/old): {ratio}",
        "",
        table(["keys", "count", "examples"], keys),
    ]


def _schema(result: ComparisonResult) -> list[str]:
    schema = result.schema_diff
    if schema.is_empty:
        return ["Schema: unchanged"]
    declared = result.policy.expected_changed_columns

    def names(columns: list[str]) -> str:
        return ", ".join(f"{c} (declared)" if c in declared else c for c in columns) or "-"

    changed = [f"{t.column}: {t.old_type} -> {t.new_type}" for t in schema.type_changed]
    return [
        "Schema:",
        f"  added:        {names(list(schema.added))}",
        f"  removed:      {names(list(schema.removed))}",
        f"  type changed: {', '.join(changed) or '-'}",
    ]


def _columns(result: ComparisonResult) -> list[str]:
    needs = pct(result.policy.min_column_match)
    rows = [
        [
            c.column,
            c.compared,
            c.mismatched,
            pct(c.match_rate),
            "declared" if c.expected_change else needs,
            "ok" if c.passed else "FAIL",
        ]
        for c in result.columns
    ]
    headers = ["column", "compared", "differ", "match", "needs", "result"]
    return ["Columns (keys in both):", table(headers, rows)] if rows else []


def _distributions(result: ComparisonResult) -> list[str]:
    rows = []
    for d in result.distributions:
        for stat in ("mean", "p50", "p90", "p99"):
            old, new = getattr(d, f"old_{stat}"), getattr(d, f"new_{stat}")
            delta = None if old is None or new is None else new - old
            rows.append([d.column if stat == "mean" else "", stat, old, new, delta])
    if not rows:
        return []
    return ["Numeric distributions:", table(["column", "stat", "old", "new", "new - old"], rows)]


def _mismatches(result: ComparisonResult) -> list[str]:
    rows = [
        [m.key if i == 0 else "", d.column, d.old, d.new]
        for m in result.mismatches
        for i, d in enumerate(m.diffs)
    ]
    if not rows:
        return []
    header = f"Top {len(result.mismatches)} mismatching keys:"
    return [header, table([result.key, "column", result.old_name, result.new_name], rows)]


def render_comparison(result: ComparisonResult) -> str:
    """A comparison as sections of tables: rows and keys, schema, columns, values, failures."""
    lines = [
        f"Comparison {result.table}: {result.old_name} -> {result.new_name}: "
        f"{_verdict(result.passed)}   ({result.elapsed_s:.1f} s, at {result.compared_at})",
        f"policy: key overlap >= {pct(result.policy.min_key_overlap)}, column match >= "
        f"{pct(result.policy.min_column_match)}, declared changes: "
        f"{', '.join(sorted(result.policy.expected_changed_columns)) or '-'}, ignored: "
        f"{', '.join(sorted(result.policy.ignore_columns)) or '-'}",
        *([f"compared: {result.scope}"] if result.scope else []),
        "",
    ]
    for section in (
        _coverage(result),
        _schema(result),
        _columns(result),
        _distributions(result),
        _mismatches(result),
        _failures(result.failures),
    ):
        if section:
            lines += [*section, ""]
    lines += _docs(result.docs_index, result.docs_page)
    return "\n".join(lines).rstrip() + "\n"
