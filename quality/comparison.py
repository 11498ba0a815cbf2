"""The result of comparing two versions of one table, as small frozen pydantic models of plain
values. Built by :func:`quality.compare.compare_tables`; rendered by :mod:`quality.rendering`.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, field_serializer, field_validator

from quality.outcomes import (
    ExpectationOutcome,
    MetadataValue,
    Result,
    evidence_metadata,
    find_outcome,
)
from quality.rendering import render_comparison
from quality.rules import ComparisonPolicy

# The checks a comparison's outcomes are grouped into (ExpectationOutcome.group).
SCHEMA, KEYS, VALUES = "schema", "keys", "values"
GROUPS = (SCHEMA, KEYS, VALUES)


class TypeChange(Result):
    """A column whose Spark type differs between the versions."""

    column: str
    old_type: str
    new_type: str


class SchemaDiff(Result):
    """Columns added, removed or retyped by the new version (ignored columns left out)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    type_changed: tuple[TypeChange, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.type_changed)


class KeyCoverage(Result):
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


class ColumnMatch(Result):
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


class NumericShift(Result):
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


class ValueDiff(Result):
    """One column's old and new value for a key (JSON-ready values)."""

    column: str
    old: Any
    new: Any


class MismatchRow(Result):
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


class ComparisonResult(Result):
    """The verdict and evidence of an old-vs-new comparison of one table.

    Attributes:
        table: the table's name.
        key: the key column the versions were joined on.
        old_name: label of the old version (e.g. ``"v1"``); likewise ``new_name``.
        passed: every expectation held (see ``failures`` otherwise).
        failures: one human-readable reason per failed check.
        schema_diff: columns added, removed, retyped (read from "schema" in older files).
        coverage: keys and rows on each side, duplicates, example keys.
        columns: per-column match rates for keys in both versions.
        distributions: numeric columns' mean and p50/p90/p99, old vs new.
        mismatches: the top-N mismatching keys with old and new values.
        outcomes: the Great Expectations evidence behind the verdict.
        policy: the thresholds and declared changes applied.
        compared_at: when the comparison ran (ISO 8601, UTC).
        elapsed_s: its wall time in seconds.
        docs_index: the Data Docs index.html, when built; ``docs_page`` its validation page.
        scope: which rows were compared when not all of them (e.g. only those a forward-only
            version and the live one wrote after the cut it started from); empty: all.
    """

    table: str
    key: str
    old_name: str
    new_name: str
    passed: bool
    failures: tuple[str, ...]
    schema_diff: SchemaDiff = Field(validation_alias=AliasChoices("schema_diff", "schema"))
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
    scope: str = ""

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
        metadata: dict[str, MetadataValue] = {
            "table": self.table,
            **self._sides_metadata(),
            "passed": self.passed,
            "failures": "\n".join(self.failures),
            **_keys_metadata(self.coverage),
            **_schema_metadata(self.schema_diff),
            **self._values_metadata(),
        }
        metadata.update(_policy_metadata(self.policy))
        metadata.update(evidence_metadata(self.outcomes, self.docs_index, self.docs_page))
        return metadata

    def render_text(self) -> str:
        """A plain-text report with tables of numbers (what ``kappa diff`` prints)."""
        return render_comparison(self)

    def group_metadata(self, group: str) -> dict[str, MetadataValue]:
        """The metadata of one check (schema, keys or values): both sides' sizes, then the
        numbers that check judged and the verdict of each of its expectations."""
        metadata = self._sides_metadata()
        policy = _policy_metadata(self.policy)
        if group == SCHEMA:
            metadata.update(_schema_metadata(self.schema_diff))
        elif group == KEYS:
            metadata.update(_keys_metadata(self.coverage))
            metadata.update({k: policy[k] for k in _KEYS_POLICY})
        elif group == VALUES:
            metadata.update(self._values_metadata())
            metadata["policy.min_column_match"] = policy["policy.min_column_match"]
        for outcome in self.outcomes:
            if outcome.group == group:
                metadata[f"expectation.{outcome.name}"] = "passed" if outcome.success else "FAILED"
                if outcome.unexpected_count is not None:
                    metadata[f"unexpected.{outcome.name}"] = outcome.unexpected_count
        return metadata

    def _sides_metadata(self) -> dict[str, MetadataValue]:
        cov = self.coverage
        return {
            "old": self.old_name,
            "new": self.new_name,
            "rows.old": cov.old_rows,
            "rows.new": cov.new_rows,
            "row_count_ratio": cov.row_count_ratio if cov.row_count_ratio is not None else "n/a",
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def _values_metadata(self) -> dict[str, MetadataValue]:
        metadata: dict[str, MetadataValue] = {}
        for match in self.columns:
            metadata[f"match_rate.{match.column}"] = match.match_rate
        for shift in self.distributions:
            for stat in ("mean", "p50", "p90", "p99"):
                for side in ("old", "new"):
                    value = getattr(shift, f"{side}_{stat}")
                    metadata[f"{stat}.{shift.column}.{side}"] = "null" if value is None else value
        return metadata

    @field_validator("policy", mode="before")
    @classmethod
    def _read_policy(cls, value: Any) -> Any:
        return ComparisonPolicy.from_dict(value) if isinstance(value, dict) else value

    @field_serializer("policy")
    def _write_policy(self, policy: ComparisonPolicy) -> dict[str, Any]:
        return policy.to_dict()


_KEYS_POLICY = (
    "policy.min_key_overlap",
    "policy.expected_changed_columns",
    "policy.expected_dropped_keys",
    "policy.expected_added_keys",
)


def _schema_metadata(schema: SchemaDiff) -> dict[str, MetadataValue]:
    return {
        "schema.added": ", ".join(schema.added),
        "schema.removed": ", ".join(schema.removed),
        "schema.type_changed": ", ".join(
            f"{t.column}: {t.old_type} -> {t.new_type}" for t in schema.type_changed
        ),
    }


def _keys_metadata(cov: KeyCoverage) -> dict[str, MetadataValue]:
    return {
        "keys.in_both": cov.in_both,
        "keys.only_old": cov.only_old,
        "keys.only_new": cov.only_new,
        "keys.dropped_expected": cov.dropped_expected,
        "duplicate_keys.old": cov.old_duplicate_keys,
        "duplicate_keys.new": cov.new_duplicate_keys,
    }
