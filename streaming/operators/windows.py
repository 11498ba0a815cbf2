"""Event-time windows: which windows a record falls in, and how sessions merge.

Windows are half-open ``[start, end)`` in epoch ms, aligned to the epoch. A tumbling window of
``size`` is a hopping window whose ``advance`` equals its size; a record at time ``t`` is in every
hopping window with ``start <= t < start + size``, ``start`` a multiple of ``advance``. A session
window joins records whose intervals ``[t, t + gap)`` overlap: two records exactly ``gap`` apart
start separate sessions. A session's end is its last record's time plus ``gap``. A window is
final once its end is at or below the grace horizon: no record that is not late can reach it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.operators.batch import TIME
from streaming.operators.errors import OperatorConfigError

START = "window_start"
END = "window_end"


def _positive(value: int, what: str) -> None:
    if not isinstance(value, int) or value <= 0:
        msg = f"{what} must be a positive number of milliseconds, got {value!r}"
        raise OperatorConfigError(msg)


@dataclass(frozen=True)
class Tumbling:
    """Back-to-back windows of ``size_ms``."""

    size_ms: int

    def __post_init__(self) -> None:
        _positive(self.size_ms, "a tumbling window's size")


@dataclass(frozen=True)
class Hopping:
    """Windows of ``size_ms`` starting every ``advance_ms`` (overlapping when advance < size)."""

    size_ms: int
    advance_ms: int

    def __post_init__(self) -> None:
        _positive(self.size_ms, "a hopping window's size")
        _positive(self.advance_ms, "a hopping window's advance")
        if self.advance_ms > self.size_ms:
            msg = (
                f"a hopping window's advance ({self.advance_ms} ms) exceeds its size "
                f"({self.size_ms} ms): records between windows would belong to none"
            )
            raise OperatorConfigError(msg)


@dataclass(frozen=True)
class Session:
    """Sessions of records less than ``gap_ms`` apart."""

    gap_ms: int

    def __post_init__(self) -> None:
        _positive(self.gap_ms, "a session window's gap")


Window = Tumbling | Hopping | Session


def assign(records: pa.Table, window: Tumbling | Hopping) -> pa.Table:
    """``records`` with ``window_start`` and ``window_end``, one row per (record, window)."""
    size = window.size_ms
    advance = window.advance_ms if isinstance(window, Hopping) else size
    times = records.column(TIME).to_numpy()
    last_start = np.floor_divide(times, advance) * advance
    rows = []
    starts = []
    for j in range(-(-size // advance)):
        start = last_start - j * advance
        inside = np.flatnonzero(start > times - size)
        rows.append(inside)
        starts.append(start[inside])
    order = np.concatenate(rows)
    start = np.concatenate(starts)
    table = records.take(pa.array(order))
    table = table.append_column(START, pa.array(start, pa.int64()))
    return table.append_column(END, pa.array(start + size, pa.int64()))


def session_groups(keys: pa.Table, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Session ids for intervals sorted by (key, start): overlapping intervals of a key share one.

    ``keys`` holds the key columns, row-aligned with ``starts`` and ``ends``.
    """
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    new_key = np.zeros(n, dtype=bool)
    new_key[0] = True
    for name in keys.column_names:
        values = keys.column(name)
        differs = pc.not_equal(values.slice(1), values.slice(0, n - 1))
        new_key[1:] |= differs.to_numpy(zero_copy_only=False)
    segment = np.cumsum(new_key)
    # Imported here: only session windows use pandas, and every Spark Python worker importing the
    # authoring API would otherwise pay its fifth of a second.
    import pandas as pd

    reach = pd.Series(ends).groupby(segment).cummax().to_numpy()
    previous = np.empty(n, dtype=np.int64)
    previous[1:] = reach[:-1]
    new_session = new_key.copy()
    new_session[1:] |= starts[1:] >= previous[1:]
    return np.cumsum(new_session) - 1
