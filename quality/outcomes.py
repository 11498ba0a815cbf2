"""Results of one table's validation, as small frozen pydantic models of plain values.

A Great Expectations validation result is large and tied to GE's classes; these models keep
the numbers a person or a Dagster asset check needs (counts, percentages, a few example values
and keys) and survive a JSON round trip (``model_dump(mode="json")`` / ``model_validate``, used
by :mod:`quality.report`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from quality.formatting import pct, show

MetadataValue = str | int | float | bool


class Result(BaseModel):
    """A frozen result model: plain values, validated on the way in, JSON on the way out."""

    model_config = ConfigDict(frozen=True)


class ExpectationOutcome(Result):
    """The evidence of one expectation: did it pass, on how many values, with which examples.

    Attributes:
        name: a short, stable id such as ``"not_null(customer_id)"`` (used in metadata keys).
        expectation_type: GE's type, e.g. ``"expect_column_values_to_not_be_null"``.
        success: whether the expectation held.
        column: the column checked (``"a = b"`` for a column pair), None for table checks.
        description: what was expected, in words.
        mostly: the fraction of values that had to pass, when the expectation has one.
        element_count: rows considered.
        unexpected_count: values that failed.
        unexpected_percent: failed values as a percentage (0-100) of the non-null values.
        missing_count: null values (not counted as failures by map expectations).
        observed_value: the observed aggregate or schema (table and aggregate expectations).
        unexpected_examples: a few failing values, as strings.
        unexpected_keys: the keys of a few failing rows, as strings.
        error: the exception message when the check itself could not run.
        source: ``"great_expectations"``, or ``"spark_schema"`` for checks GE cannot express.
        group: the check of a comparison this evidence belongs to (``quality.diff_checks``:
            schema, keys or values); None for a table's suite.
    """

    name: str
    expectation_type: str
    success: bool
    column: str | None = None
    description: str = ""
    mostly: float | None = None
    element_count: int | None = None
    unexpected_count: int | None = None
    unexpected_percent: float | None = None
    missing_count: int | None = None
    observed_value: Any = None
    unexpected_examples: tuple[str, ...] = ()
    unexpected_keys: tuple[str, ...] = ()
    error: str | None = None
    source: str = "great_expectations"
    group: str | None = None

    @property
    def checked_count(self) -> int | None:
        """Values the expectation judged (non-null values for map expectations)."""
        if self.element_count is None:
            return None
        return self.element_count - (self.missing_count or 0)

    @property
    def pass_rate(self) -> float | None:
        """Fraction of judged values that passed, None for aggregate expectations."""
        checked = self.checked_count
        if checked is None or self.unexpected_count is None:
            return None
        return 1.0 if checked == 0 else (checked - self.unexpected_count) / checked

    def reason(self) -> str:
        """Why the expectation failed, in one line with its numbers."""
        label = self.description or self.name
        if self.error:
            return f"{label}: could not be checked ({self.error})"
        if self.unexpected_count is not None and self.checked_count is not None:
            needed = f", needs >= {pct(self.mostly)}" if self.mostly is not None else ""
            text = (
                f"{label}: {self.unexpected_count} of {self.checked_count} values unexpected "
                f"({pct(1.0 - (self.pass_rate or 0.0))} failing{needed})"
            )
        elif isinstance(self.observed_value, Mapping) and "missing" in self.observed_value:
            missing = ", ".join(self.observed_value["missing"]) or "none"
            unexpected = ", ".join(self.observed_value["unexpected"]) or "none"
            text = f"{label}: missing {missing}; unexpected {unexpected}"
        else:
            text = f"{label}: observed {show(self.observed_value, 120)}"
        if self.unexpected_keys:
            text += f"; e.g. keys {', '.join(self.unexpected_keys[:3])}"
        elif self.unexpected_examples:
            text += f"; e.g. {', '.join(self.unexpected_examples[:3])}"
        return text


def spark_type_outcome(
    column: str, expected: str, observed: str, description: str, group: str | None = None
) -> ExpectationOutcome:
    """The outcome of comparing a column's exact Spark type, a check GE cannot express."""
    return ExpectationOutcome(
        group=group,
        name=f"spark_type({column})",
        expectation_type="spark_type_equals",
        success=observed == expected,
        column=column,
        description=description,
        observed_value=observed,
        source="spark_schema",
    )


def find_outcome(outcomes: tuple[ExpectationOutcome, ...], name: str) -> ExpectationOutcome:
    """The outcome with this :attr:`ExpectationOutcome.name`.

    Raises:
        KeyError: no expectation of that name ran; the message lists the names.
    """
    for outcome in outcomes:
        if outcome.name == name:
            return outcome
    msg = f"no outcome {name!r}; known: {', '.join(o.name for o in outcomes)}"
    raise KeyError(msg)


def evidence_metadata(
    outcomes: tuple[ExpectationOutcome, ...], docs_index: str | None, docs_page: str | None
) -> dict[str, MetadataValue]:
    """Per-expectation numbers as flat metadata entries (``"<name>.unexpected_count"``), then
    the Data Docs links when they were built."""
    metadata: dict[str, MetadataValue] = {}
    for outcome in outcomes:
        metadata[f"{outcome.name}.success"] = outcome.success
        if outcome.unexpected_count is not None:
            metadata[f"{outcome.name}.unexpected_count"] = outcome.unexpected_count
        if outcome.unexpected_percent is not None:
            metadata[f"{outcome.name}.unexpected_percent"] = round(outcome.unexpected_percent, 6)
        if isinstance(outcome.observed_value, int | float | str | bool):
            metadata[f"{outcome.name}.observed_value"] = outcome.observed_value
    if docs_page:
        metadata["data_docs_page"] = docs_page
    if docs_index:
        metadata["data_docs_index"] = docs_index
    return metadata


class TableValidation(Result):
    """The result of validating one table against its :class:`~quality.rules.TableSpec`.

    Attributes:
        table: the spec's name.
        success: every expectation held.
        row_count: rows in the validated table.
        now_ms: the "now" time-relative rules were checked against (epoch ms).
        validated_at: when the validation ran (ISO 8601, UTC).
        suite_name: the GE expectation suite's name.
        outcomes: one entry per expectation, in suite order.
        docs_index: the Data Docs index.html, when Data Docs were built.
        docs_page: the Data Docs page of this validation, when built.
    """

    table: str
    success: bool
    row_count: int
    now_ms: int
    validated_at: str
    suite_name: str
    outcomes: tuple[ExpectationOutcome, ...]
    docs_index: str | None = None
    docs_page: str | None = None

    @property
    def failures(self) -> tuple[str, ...]:
        """One human-readable reason per failed expectation."""
        return tuple(o.reason() for o in self.outcomes if not o.success)

    def outcome(self, name: str) -> ExpectationOutcome:
        """The outcome with this name (see :func:`find_outcome`)."""
        return find_outcome(self.outcomes, name)

    def to_metadata(self) -> dict[str, MetadataValue]:
        """Plain numbers and strings for Dagster asset or check metadata."""
        metadata: dict[str, MetadataValue] = {
            "table": self.table,
            "success": self.success,
            "row_count": self.row_count,
            "expectations_evaluated": len(self.outcomes),
            "expectations_failed": sum(not o.success for o in self.outcomes),
            "now_ms": self.now_ms,
            "validated_at": self.validated_at,
            "failures": "\n".join(self.failures),
        }
        metadata.update(evidence_metadata(self.outcomes, self.docs_index, self.docs_page))
        return metadata
