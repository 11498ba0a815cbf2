"""The result of comparing two versions of one table, as small frozen models of plain values.

Built by :func:`quality.compare.compare_tables`; rendered by :mod:`quality.report`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from quality.outcomes import ExpectationOutcome, MetadataValue, evidence_metadata, find_outcome
from quality.rules import ComparisonPolicy


@dataclass(frozen=True)
class TypeChange:
    """A column whose Spark type differs between the versions."""

    column: str
    old_type: str
    new_type: str


@dataclass(frozen=True)
class SchemaDiff:
    """Columns added, removed or retyped by the new version (ignored columns left out)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    type_changed: tuple[TypeChange, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.type_changed)


@dataclass(frozen=True)
class KeyCoverage:
    """Which keys each version holds, and how many rows.

    Attributes:
        old_rows: rows in old (duplicates included); likewise ``new_rows``.
        old_keys: distinct keys in old; likewise ``new_keys``.
        in_both: keys in both versions.
        only_old: keys only in old (``dropped_expected`` of them declared in the policy).
        only_new: keys only in new (``added_expected`` of them declared in the policy).
        old_duplicate_keys: keys that occur more than once in old; likewise for new.
        old_duplicate_rows: rows beyond the first per key in old; likewise for new.
        only_old_examples: up to 5 keys only in old (undeclared first, then by key).
        only_new_examples: up to 5 keys only in new.
    """

    old_rows: int
    new_rows: int
    old_keys: int
    new_keys: int
    in_both: int
    only_old: int
    only_new: int
    dropped_expected: int = 0
    added_expected: int = 0
    old_duplicate_keys: int = 0
    new_duplicate_keys: int = 0
    old_duplicate_rows: int = 0
    new_duplicate_rows: int = 0
    only_old_examples: tuple[str, ...] = ()
    only_new_examples: tuple[str, ...] = ()

    @property
    def row_count_ratio(self) -> float | None:
        """new rows / old rows (None when old is empty)."""
        return self.new_rows / self.old_rows if self.old_rows else None


@dataclass(frozen=True)
class ColumnMatch:
    """How often a shared column has the same value for a key in both versions.

    Nulls compare null-safely: null in both counts as a match.
    """

    column: str
    compared: int
    matched: int
    expected_change: bool
    passed: bool

    @property
    def match_rate(self) -> float:
        return self.matched / self.compared if self.compared else 1.0

    @property
    def mismatched(self) -> int:
        return self.compared - self.matched


@dataclass(frozen=True)
class NumericShift:
    """Mean and approximate percentiles of a numeric column in each version."""

    column: str
    old_mean: float | None
    new_mean: float | None
    old_p50: float | None
    new_p50: float | None
    old_p90: float | None
    new_p90: float | None
    old_p99: float | None
    new_p99: float | None


@dataclass(frozen=True)
class ValueDiff:
    """One column's old and new value for a key (JSON-ready values)."""

    column: str
    old: Any
    new: Any


@dataclass(frozen=True)
class MismatchRow:
    """A key whose values differ, with the differing columns side by side."""

    key: str
    diffs: tuple[ValueDiff, ...]


def _policy_metadata(policy: ComparisonPolicy) -> dict[str, MetadataValue]:
    return {
        "policy.min_key_overlap": policy.min_key_overlap,
        "policy.min_column_match": policy.min_column_match,
        "policy.expected_changed_columns": ", ".join(sorted(policy.expected_changed_columns)),
        "policy.ignore_columns": ", ".join(sorted(policy.ignore_columns)),
        "policy.expected_dropped_keys": len(policy.expected_dropped_keys),
        "policy.expected_added_keys": len(policy.expected_added_keys),
    }


@dataclass(frozen=True)
class ComparisonResult:
    """The verdict and evidence of an old-vs-new comparison of one table.

    Attributes:
        table: the table's name.
        key: the key column the versions were joined on.
        old_name: label of the old version (e.g. ``"v1"``); likewise ``new_name``.
        passed: every expectation held (see ``failures`` otherwise).
        failures: one human-readable reason per failed check.
        schema: columns added, removed, retyped.
        coverage: keys and rows on each side, duplicates, example keys.
        columns: per-column match rates for keys in both versions.
        distributions: numeric columns' mean and p50/p90/p99, old vs new.
        mismatches: the top-N mismatching keys with old and new values.
        outcomes: the Great Expectations evidence behind the verdict.
        policy: the thresholds and declared changes applied.
        compared_at: when the comparison ran (ISO 8601, UTC).
        elapsed_s: its wall time in seconds.
        docs_index: the Data Docs index.html, when built; ``docs_page`` its validation page.
    """

    table: str
    key: str
    old_name: str
    new_name: str
    passed: bool
    failures: tuple[str, ...]
    schema: SchemaDiff
    coverage: KeyCoverage
    columns: tuple[ColumnMatch, ...]
    distributions: tuple[NumericShift, ...]
    mismatches: tuple[MismatchRow, ...]
    outcomes: tuple[ExpectationOutcome, ...]
    policy: ComparisonPolicy
    compared_at: str
    elapsed_s: float
    docs_index: str | None = None
    docs_page: str | None = None

    def column(self, name: str) -> ColumnMatch:
        """The match statistics of one column.

        Raises:
            KeyError: the column was not compared; the message lists those that were.
        """
        for match in self.columns:
            if match.column == name:
                return match
        msg = f"column {name!r} was not compared; compared: {[c.column for c in self.columns]}"
        raise KeyError(msg)

    def outcome(self, name: str) -> ExpectationOutcome:
        """The GE evidence of one check by name (e.g. ``"match(email)"``; see
        :func:`~quality.outcomes.find_outcome`)."""
        return find_outcome(self.outcomes, name)

    def to_metadata(self) -> dict[str, MetadataValue]:
        """Plain numbers and strings for Dagster asset or check metadata."""
        cov = self.coverage
        metadata: dict[str, MetadataValue] = {
            "table": self.table,
            "old": self.old_name,
            "new": self.new_name,
            "passed": self.passed,
            "failures": "\n".join(self.failures),
            "rows.old": cov.old_rows,
            "rows.new": cov.new_rows,
            "row_count_ratio": cov.row_count_ratio if cov.row_count_ratio is not None else "n/a",
            "keys.in_both": cov.in_both,
            "keys.only_old": cov.only_old,
            "keys.only_new": cov.only_new,
            "keys.dropped_expected": cov.dropped_expected,
            "duplicate_keys.old": cov.old_duplicate_keys,
            "duplicate_keys.new": cov.new_duplicate_keys,
            "schema.added": ", ".join(self.schema.added),
            "schema.removed": ", ".join(self.schema.removed),
            "schema.type_changed": ", ".join(
                f"{t.column}: {t.old_type} -> {t.new_type}" for t in self.schema.type_changed
            ),
            "elapsed_s": round(self.elapsed_s, 3),
        }
        for match in self.columns:
            metadata[f"match_rate.{match.column}"] = match.match_rate
        for shift in self.distributions:
            for stat in ("mean", "p50", "p90", "p99"):
                for side in ("old", "new"):
                    value = getattr(shift, f"{side}_{stat}")
                    metadata[f"{stat}.{shift.column}.{side}"] = "null" if value is None else value
        metadata.update(_policy_metadata(self.policy))
        metadata.update(evidence_metadata(self.outcomes, self.docs_index, self.docs_page))
        return metadata

    def render_text(self) -> str:
        """A plain-text report with tables of numbers (what ``kappa diff`` prints)."""
        from quality.report import render_comparison

        return render_comparison(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("schema", "coverage"):
            data[name] = asdict(data[name])
        for name in ("columns", "distributions", "mismatches"):
            data[name] = [asdict(item) for item in data[name]]
        data["outcomes"] = [o.to_dict() for o in self.outcomes]
        data["policy"] = self.policy.to_dict()
        data["failures"] = list(self.failures)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparisonResult:
        """Inverse of :meth:`to_dict`."""
        values = dict(data)
        schema = data["schema"]
        values["schema"] = SchemaDiff(
            added=tuple(schema["added"]),
            removed=tuple(schema["removed"]),
            type_changed=tuple(TypeChange(**t) for t in schema["type_changed"]),
        )
        coverage = dict(data["coverage"])
        for name in ("only_old_examples", "only_new_examples"):
            coverage[name] = tuple(coverage[name])
        values["coverage"] = KeyCoverage(**coverage)
        values["columns"] = tuple(ColumnMatch(**c) for c in data["columns"])
        values["distributions"] = tuple(NumericShift(**d) for d in data["distributions"])
        values["mismatches"] = tuple(
            MismatchRow(key=m["key"], diffs=tuple(ValueDiff(**d) for d in m["diffs"]))
            for m in data["mismatches"]
        )
        values["outcomes"] = tuple(ExpectationOutcome.from_dict(o) for o in data["outcomes"])
        values["policy"] = ComparisonPolicy.from_dict(data["policy"])
        values["failures"] = tuple(data["failures"])
        return cls(**values)
