"""A composite key as one value: the column the comparison joins on, and the text reports show.

A table keyed by several columns (a window's ``customer_id`` and ``window_start``) is compared
on one string column holding the key as JSON, e.g. ``{"customer_id":"c1","window_start":0}``:
exact (unlike joining the parts with a separator, which a value containing it makes ambiguous)
and readable in the examples a report shows; a table suite's failing rows show their key the
same way (:func:`key_text`). The parts leave the compared columns: they are equal by definition
on every key in both versions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from quality.errors import QualityError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def one_key_column(
    old: DataFrame, new: DataFrame, key: str | Sequence[str]
) -> tuple[DataFrame, DataFrame, str]:
    """Both versions with their key in one column, and that column's name.

    Raises:
        QualityError: a key column is missing from a version.
    """
    parts = [key] if isinstance(key, str) else list(key)
    if not parts:
        msg = "the comparison needs a key: name at least one key column"
        raise QualityError(msg)
    for side, df in (("old", old), ("new", new)):
        missing = [p for p in parts if p not in df.columns]
        if missing:
            msg = f"key column {missing[0]!r} is missing from the {side} version "
            msg += f"(columns: {df.columns})"
            raise QualityError(msg)
    if len(parts) == 1:
        return old, new, parts[0]
    from pyspark.sql import functions as F

    name = ", ".join(parts)  # e.g. "customer_id, window_start"
    as_json = F.to_json(F.struct(*[F.col(p) for p in parts]), {"ignoreNullFields": "false"})

    def keyed(df: DataFrame) -> DataFrame:
        rest = [F.col(c) for c in df.columns if c not in parts]
        return df.select(as_json.alias(name), *rest)

    return keyed(old), keyed(new), name


def key_text(row: Mapping[str, Any], parts: Sequence[str]) -> str:
    """A composite key's value as the comparison's key column spells it (compact JSON)."""
    return json.dumps({p: row[p] for p in parts}, separators=(",", ":"), default=str)
