"""Formatting numbers and values for failure messages and plain-text reports."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Sequence
from typing import Any


def pct(fraction: float | None) -> str:
    """A fraction as a percentage with up to two decimals (more only to avoid showing a
    non-total as 100% or a non-zero as 0%).

    >>> pct(0.95), pct(0.9995), pct(0.949494), pct(0.99999), pct(1.0), pct(0.0000001)
    ('95.0%', '99.95%', '94.95%', '99.999%', '100.0%', '0.00001%')
    """
    if fraction is None or math.isnan(fraction):
        return "n/a"
    value = fraction * 100.0
    for decimals in range(2, 9):
        rounded = round(value, decimals)
        if (rounded >= 100.0 and fraction < 1.0) or (rounded <= 0.0 < fraction):
            continue
        text = f"{value:.{decimals}f}".rstrip("0")
        return f"{text}0%" if text.endswith(".") else f"{text}%"
    return f"{value}%"


def jsonable(value: Any) -> Any:
    """A value made of JSON types only (decimals and numpy numbers become floats/ints)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return jsonable(value.item())
    return str(value)


def show(value: Any, width: int = 40) -> str:
    """A value as a short string for a table cell (``null`` for None, truncated)."""
    if value is None:
        text = "null"
    elif isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        text = str(int(value))
    elif isinstance(value, float):
        text = f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
    else:
        text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int = 40) -> str:
    """A plain-text table with aligned columns (numbers right-aligned)."""
    cells = [[show(v, width) for v in row] for row in rows]
    numeric = [
        all(isinstance(row[i], int | float) and not isinstance(row[i], bool) for row in rows)
        if rows
        else False
        for i in range(len(headers))
    ]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in cells)])
