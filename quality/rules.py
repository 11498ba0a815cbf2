"""Domain rules a pipeline declares next to its code, and what a new version may change.

Plain frozen dataclasses with no Great Expectations or Spark import: declaring a table's rules
costs nothing at import time. Each rule names the GE expectation that checks it
(:meth:`Rule.expectation`); :mod:`quality.suites` turns them into a suite.

Example:
    >>> CUSTOMERS = TableSpec(
    ...     name="customers",
    ...     key="customer_id",
    ...     schema={"customer_id": "string", "country": "string", "updated_at": "bigint"},
    ...     rules=(InSet("country", ("DE", "FR")), NotInFuture("updated_at", timedelta(minutes=1))),
    ... )
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from quality.durations import MILLISECOND, timedelta_or_ms
from quality.errors import SpecError
from quality.spark_types import normalize_type

Expectation = tuple[str, dict[str, Any]]
"""A GE expectation class name (in ``great_expectations.expectations``) and its arguments."""


def _check_mostly(rule: Rule, mostly: float) -> None:
    if not 0.0 < mostly <= 1.0:
        msg = f"{rule!r}: mostly must be in (0, 1], got {mostly}"
        raise SpecError(msg)


@dataclass(frozen=True)
class Rule:
    """A check on one column; subclasses say which GE expectation runs it."""

    column: str

    def expectation(self, now_ms: int) -> Expectation:
        """The GE expectation class name and keyword arguments that check this rule.

        Args:
            now_ms: the validation's "now" in epoch milliseconds (for time-relative rules).
        """
        raise NotImplementedError

    def describe(self) -> str:
        """One line for reports, e.g. ``"country in set of 249 values"``."""
        raise NotImplementedError


@dataclass(frozen=True)
class NotNull(Rule):
    """The column has no nulls (or at least a ``mostly`` fraction of non-null values)."""

    mostly: float = 1.0

    def __post_init__(self) -> None:
        _check_mostly(self, self.mostly)

    def expectation(self, now_ms: int) -> Expectation:
        return "ExpectColumnValuesToNotBeNull", {"column": self.column, "mostly": self.mostly}

    def describe(self) -> str:
        return f"{self.column} not null"


@dataclass(frozen=True)
class MatchesRegex(Rule):
    """Non-null values match a (Java) regular expression; ``mostly`` of them at least."""

    regex: str
    mostly: float = 1.0

    def __post_init__(self) -> None:
        _check_mostly(self, self.mostly)

    def expectation(self, now_ms: int) -> Expectation:
        kwargs = {"column": self.column, "regex": self.regex, "mostly": self.mostly}
        return "ExpectColumnValuesToMatchRegex", kwargs

    def describe(self) -> str:
        return f"{self.column} matches {self.regex}"


@dataclass(frozen=True)
class InSet(Rule):
    """Non-null values belong to a fixed set (e.g. ISO country codes)."""

    values: tuple[Any, ...]
    mostly: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(dict.fromkeys(self.values)))
        if not self.values:
            msg = f"InSet({self.column!r}): the set of allowed values is empty"
            raise SpecError(msg)
        _check_mostly(self, self.mostly)

    def expectation(self, now_ms: int) -> Expectation:
        kwargs = {"column": self.column, "value_set": list(self.values), "mostly": self.mostly}
        return "ExpectColumnValuesToBeInSet", kwargs

    def describe(self) -> str:
        return f"{self.column} in set of {len(self.values)} values"


@dataclass(frozen=True)
class Between(Rule):
    """Non-null values lie in ``[min_value, max_value]`` (either bound may be None)."""

    min_value: float | int | None = None
    max_value: float | int | None = None
    mostly: float = 1.0

    def __post_init__(self) -> None:
        if self.min_value is None and self.max_value is None:
            msg = f"Between({self.column!r}): give min_value, max_value or both"
            raise SpecError(msg)
        _check_mostly(self, self.mostly)

    def expectation(self, now_ms: int) -> Expectation:
        kwargs = {
            "column": self.column,
            "min_value": self.min_value,
            "max_value": self.max_value,
            "mostly": self.mostly,
        }
        return "ExpectColumnValuesToBeBetween", kwargs

    def describe(self) -> str:
        low = "-inf" if self.min_value is None else self.min_value
        high = "+inf" if self.max_value is None else self.max_value
        return f"{self.column} in [{low}, {high}]"


@dataclass(frozen=True, init=False)
class NotInFuture(Rule):
    """An epoch-millisecond column is not later than now plus ``tolerance`` (a timedelta).

    ``tolerance_ms=`` (or a bare number of milliseconds) still works, with a
    ``DeprecationWarning``.
    """

    tolerance: timedelta

    def __init__(
        self,
        column: str,
        tolerance: timedelta | None = None,
        *,
        tolerance_ms: int | None = None,
    ) -> None:
        object.__setattr__(self, "column", column)
        try:
            given = timedelta_or_ms(
                tolerance,
                tolerance_ms,
                what=f"NotInFuture({column!r}): the tolerance",
                names=("tolerance", "tolerance_ms"),
                stacklevel=3,
            )
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        tolerance = timedelta(0) if given is None else given
        if tolerance < timedelta(0):
            msg = f"NotInFuture({column!r}): the tolerance must be zero or more, not {tolerance}"
            raise SpecError(msg)
        object.__setattr__(self, "tolerance", tolerance)

    @property
    def tolerance_ms(self) -> int:
        return self.tolerance // MILLISECOND

    def expectation(self, now_ms: int) -> Expectation:
        kwargs = {"column": self.column, "max_value": now_ms + self.tolerance_ms}
        return "ExpectColumnValuesToBeBetween", kwargs

    def describe(self) -> str:
        return f"{self.column} <= now + {self.tolerance_ms} ms"


@dataclass(frozen=True)
class SumNonNegative(Rule):
    """The column's total over the table is >= 0 (e.g. a ledger of amounts and refunds).

    For "every value is >= 0" declare ``Between(column, min_value=0)`` instead.
    """

    def expectation(self, now_ms: int) -> Expectation:
        return "ExpectColumnSumToBeBetween", {"column": self.column, "min_value": 0}

    def describe(self) -> str:
        return f"sum({self.column}) >= 0"


@dataclass(frozen=True)
class TableSpec:
    """What a compacted table must look like: its key, exact schema and domain rules.

    Attributes:
        name: the table's logical name (the pipeline name), used for suite and report names.
        key: the key column, or the columns of a composite key (a tuple); each key column
            must be non-null (except ``nullable_keys``) and the key unique.
        schema: column -> Spark simple type string ("string", "bigint", "decimal(18,2)").
            Stored in Spark's canonical spelling ("long" becomes "bigint").
        rules: the domain rules, checked in order.
        nullable_keys: key columns that may be null (an outer join's row without a match
            lacks one side's key).
    """

    name: str
    key: str | tuple[str, ...]
    schema: Mapping[str, str]
    rules: tuple[Rule, ...] = ()
    nullable_keys: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """The key's columns (one for a simple key)."""
        return (self.key,) if isinstance(self.key, str) else self.key

    def __post_init__(self) -> None:
        if not self.name:
            msg = "TableSpec: name must not be empty"
            raise SpecError(msg)
        schema = {str(col): normalize_type(type_) for col, type_ in self.schema.items()}
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "rules", tuple(self.rules))
        if not isinstance(self.key, str):
            object.__setattr__(self, "key", tuple(self.key))
        if not self.keys:
            msg = f"TableSpec {self.name!r}: name the key column(s)"
            raise SpecError(msg)
        object.__setattr__(self, "nullable_keys", tuple(self.nullable_keys))
        stray = [c for c in self.nullable_keys if c not in self.keys]
        if stray:
            msg = f"TableSpec {self.name!r}: nullable keys {stray} are not key columns"
            raise SpecError(msg)
        for column in self.keys:
            if column not in schema:
                msg = f"TableSpec {self.name!r}: key {column!r} is not a column of its schema"
                raise SpecError(msg)
        for rule in self.rules:
            if not isinstance(rule, Rule):
                msg = f"TableSpec {self.name!r}: {rule!r} is not a quality.rules.Rule"
                raise SpecError(msg)
            if rule.column not in schema:
                msg = f"TableSpec {self.name!r}: {rule!r} names a column not in the schema"
                raise SpecError(msg)


def _strings(values: Iterable[Any]) -> frozenset[str]:
    if isinstance(values, str):
        return frozenset({values})
    return frozenset(str(v) for v in values)


@dataclass(frozen=True)
class ComparisonPolicy:
    """Thresholds an old-vs-new comparison must meet, and the changes a new version declares.

    Attributes:
        min_key_overlap: fraction of old keys that must still be in new (and of new keys that
            must already be in old), after removing declared drops and additions.
        min_column_match: fraction of shared keys whose value must be equal in each column.
        expected_changed_columns: columns that may differ, be added, removed or change type.
        expected_dropped_keys: keys (as strings) that may be missing from new.
        ignore_columns: columns left out of the comparison (bookkeeping such as offsets).
        expected_added_keys: keys (as strings) that may be new in the new version.
    """

    min_key_overlap: float = 0.999
    min_column_match: float = 0.999
    expected_changed_columns: frozenset[str] = frozenset()
    expected_dropped_keys: frozenset[str] = frozenset()
    ignore_columns: frozenset[str] = field(default=frozenset({"partition", "offset"}))
    expected_added_keys: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for name in ("min_key_overlap", "min_column_match"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                msg = f"ComparisonPolicy: {name} must be in [0, 1], got {value}"
                raise SpecError(msg)
        for name in (
            "expected_changed_columns",
            "expected_dropped_keys",
            "ignore_columns",
            "expected_added_keys",
        ):
            object.__setattr__(self, name, _strings(getattr(self, name)))

    def to_dict(self) -> dict[str, Any]:
        """The policy as JSON-ready data (sets become sorted lists)."""
        return {
            "min_key_overlap": self.min_key_overlap,
            "min_column_match": self.min_column_match,
            "expected_changed_columns": sorted(self.expected_changed_columns),
            "expected_dropped_keys": sorted(self.expected_dropped_keys),
            "ignore_columns": sorted(self.ignore_columns),
            "expected_added_keys": sorted(self.expected_added_keys),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparisonPolicy:
        """Inverse of :meth:`to_dict`."""
        return cls(**{k: (frozenset(v) if isinstance(v, list) else v) for k, v in data.items()})
