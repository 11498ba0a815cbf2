"""Event-time windows: which windows a record falls in, and how sessions merge.

Windows are half-open ``[start, end)`` in epoch ms, aligned to the epoch. A tumbling window of
``size`` is a hopping window whose ``advance`` equals its size; a record at time ``t`` is in every
hopping window with ``start <= t < start + size``, ``start`` a multiple of ``advance``. A session
window joins records whose intervals ``[t, t + gap)`` overlap: two records exactly ``gap`` apart
start separate sessions. A session's end is its last record's time plus ``gap``. A sliding window
of ``size`` (Kafka Streams' ``SlidingWindows``) holds the records at most ``size`` apart: per key,
every window ``[s, s + size]`` (both ends included, so ``window_end`` is ``s + size + 1``) whose
start ``s`` is a record's time minus ``size`` or a record's time plus 1 ms, and that holds a
record. A window is final once its end is at or below the grace horizon: no record that is not
late can reach it.

Lengths are declared as ``timedelta`` (``Tumbling(size=timedelta(hours=1))``) and kept as whole
milliseconds, the unit of event time. The ``*_ms`` parameters and a bare number of milliseconds
still work, with a ``DeprecationWarning``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from quality.durations import MILLISECOND, timedelta_or_ms
from streaming.operators.batch import TIME
from streaming.operators.errors import OperatorConfigError

START = "window_start"
END = "window_end"
SESSION_START = "session_start"
SESSION_END = "session_end"


def _length(
    what: str, value: timedelta | int | None, ms: int | None, names: tuple[str, str]
) -> timedelta:
    """A window length given as ``value`` (a timedelta) or, deprecated, as milliseconds (``ms``,
    or a number for ``value``); ``names`` is (new, old) parameter name, for the messages."""
    try:
        length = timedelta_or_ms(value, ms, what=what, names=names, stacklevel=4)
    except ValueError as exc:
        raise OperatorConfigError(str(exc)) from None
    if length is None:
        msg = f"{what}: give {names[0]}= as a timedelta, e.g. {names[0]}=timedelta(minutes=5)"
        raise OperatorConfigError(msg)
    if length <= timedelta(0) or length % MILLISECOND:
        msg = f"{what} must be a positive whole number of milliseconds, got {length}"
        raise OperatorConfigError(msg)
    return length


def _ms(length: timedelta) -> int:
    return length // MILLISECOND


@dataclass(frozen=True, init=False, repr=False)
class Tumbling:
    """Back-to-back windows of ``size``."""

    size: timedelta

    def __init__(self, size: timedelta | None = None, *, size_ms: int | None = None) -> None:
        length = _length("a tumbling window's size", size, size_ms, ("size", "size_ms"))
        object.__setattr__(self, "size", length)

    @property
    def size_ms(self) -> int:
        return _ms(self.size)

    # The repr is part of a plan's fingerprint (``Plan.describe``): in milliseconds, so a window
    # has the same one whichever spelling declared it.
    def __repr__(self) -> str:
        return f"Tumbling(size_ms={self.size_ms})"


@dataclass(frozen=True, init=False, repr=False)
class Hopping:
    """Windows of ``size`` starting every ``advance`` (overlapping when advance < size)."""

    size: timedelta
    advance: timedelta

    def __init__(
        self,
        size: timedelta | None = None,
        advance: timedelta | None = None,
        *,
        size_ms: int | None = None,
        advance_ms: int | None = None,
    ) -> None:
        length = _length("a hopping window's size", size, size_ms, ("size", "size_ms"))
        step = _length("a hopping window's advance", advance, advance_ms, ("advance", "advance_ms"))
        if step > length:
            msg = (
                f"a hopping window's advance ({step}) exceeds its size ({length}): records "
                "between windows would belong to none"
            )
            raise OperatorConfigError(msg)
        object.__setattr__(self, "size", length)
        object.__setattr__(self, "advance", step)

    @property
    def size_ms(self) -> int:
        return _ms(self.size)

    @property
    def advance_ms(self) -> int:
        return _ms(self.advance)

    def __repr__(self) -> str:  # in milliseconds, as Tumbling's
        return f"Hopping(size_ms={self.size_ms}, advance_ms={self.advance_ms})"


@dataclass(frozen=True, init=False, repr=False)
class Session:
    """Sessions of records less than ``gap`` apart."""

    gap: timedelta

    def __init__(self, gap: timedelta | None = None, *, gap_ms: int | None = None) -> None:
        object.__setattr__(
            self, "gap", _length("a session window's gap", gap, gap_ms, ("gap", "gap_ms"))
        )

    @property
    def gap_ms(self) -> int:
        return _ms(self.gap)

    def __repr__(self) -> str:  # in milliseconds, as Tumbling's
        return f"Session(gap_ms={self.gap_ms})"


@dataclass(frozen=True, init=False, repr=False)
class Sliding:
    """A window per distinct content: the records at most ``size`` apart (Kafka Streams'
    ``SlidingWindows.ofTimeDifferenceAndGrace(size, grace)``; both ends included)."""

    size: timedelta

    def __init__(self, size: timedelta) -> None:
        if not isinstance(size, timedelta):
            msg = f"a sliding window's size is a timedelta, e.g. timedelta(minutes=5), not {size!r}"
            raise OperatorConfigError(msg)
        length = _length("a sliding window's size", size, None, ("size", ""))
        object.__setattr__(self, "size", length)

    @property
    def size_ms(self) -> int:
        return _ms(self.size)

    def __repr__(self) -> str:  # in milliseconds, as Tumbling's
        return f"Sliding(size_ms={self.size_ms})"


Window = Tumbling | Hopping | Session | Sliding


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
