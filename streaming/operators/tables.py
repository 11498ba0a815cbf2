"""Arrow helpers the operators share: aligned lookups, record order, state transitions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from streaming.state import (
    State,
    TableDelta,
    apply_delta,
    key_mask,
    key_of,
    last_per_key,
    with_key,
)
from streaming.state.keyed_tables import collapse


def fetch(table: pa.Table | None, key: Sequence[str], probe: pa.Table) -> pa.Table | None:
    """The rows of ``table`` whose key occurs in ``probe`` (None when ``table`` is None)."""
    if table is None:
        return None
    return table.filter(key_mask(table, key, probe))


def lookup(
    probe: pa.Table, table: pa.Table | None, key: Sequence[str], columns: Sequence[str]
) -> tuple[np.ndarray, pa.Table | None]:
    """Per probe row, whether ``table`` has its key, and ``columns`` of that row (aligned).

    Keys must be unique in ``table``. Missing rows come back as nulls.
    """
    n = probe.num_rows
    if table is None or table.num_rows == 0 or n == 0:
        return np.zeros(n, dtype=bool), None
    found = fetch(table, key, probe)
    assert found is not None
    if found.num_rows == 0:
        return np.zeros(n, dtype=bool), None
    left = probe.select(list(key)).append_column("__row", pa.array(np.arange(n)))
    right = found.select([*key, *columns]).append_column(
        "__hit", pa.array(np.ones(found.num_rows, dtype=bool))
    )
    joined = left.join(right, keys=list(key), join_type="left outer")
    joined = joined.sort_by("__row")
    hit = joined.column("__hit").fill_null(False).to_numpy(zero_copy_only=False)
    return hit, joined.select(list(columns))


def supersede(
    transition: Transition,
    name: str,
    key: Sequence[str],
    records: pa.Table,
    order: Sequence[str],
    stored: Callable[[pa.Table], pa.Table] | None = None,
) -> tuple[pa.Table, np.ndarray]:
    """Keep, per key, the greatest record by ``order`` among ``records`` and table ``name``.

    Returns the records that beat the stored row of their key (or have none), which replace it
    in the table (as ``stored(records)`` when given), and per winner whether it replaced a row.
    """
    if records.num_rows == 0:
        return records, np.zeros(0, dtype=bool)
    candidates = records.take(last_per_key(records, key, order))
    found, old = lookup(candidates, transition.table(name), key, order)
    wins = ~found
    if old is not None and found.any():
        rows = np.flatnonzero(found)
        wins[rows] = later(
            [column(candidates, c)[rows] for c in order],
            [old.column(c).take(pa.array(rows)).to_numpy() for c in order],
        )
    winners = candidates.filter(wins)
    replaced = found[wins]
    rows_to_store = winners if stored is None else stored(winners)
    transition.change(name, key, deletes=winners.filter(replaced), inserts=rows_to_store)
    return winners, replaced


def as_of(
    left_codes: np.ndarray,
    left_times: np.ndarray,
    right_codes: np.ndarray,
    right_order: Sequence[np.ndarray],
) -> np.ndarray:
    """Per left row, the right row of the same key code with the greatest order whose time
    (``right_order[0]``) is at or below the left row's time; -1 where there is none.

    Later columns of ``right_order`` break ties in time (the greatest wins).
    """
    n = len(left_codes)
    if n == 0 or len(right_codes) == 0:
        return np.full(n, -1, dtype=np.int64)
    times, ranks = np.unique(np.concatenate([left_times, right_order[0]]), return_inverse=True)
    span = len(times)
    left_keys = left_codes * span + ranks[:n]
    right_keys = right_codes * span + ranks[n:]
    ranked = np.lexsort((*reversed(right_order[1:]), right_keys))
    position = np.searchsorted(right_keys[ranked], left_keys, side="right") - 1
    picks = np.full(n, -1, dtype=np.int64)
    hit = position >= 0
    candidates = ranked[position[hit]]
    same = right_codes[candidates] == left_codes[hit]
    rows = np.flatnonzero(hit)[same]
    picks[rows] = candidates[same]
    return picks


def later(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> np.ndarray:
    """Element-wise whether tuple ``a`` is lexicographically greater than tuple ``b``."""
    greater = np.zeros(len(a[0]), dtype=bool)
    equal = np.ones(len(a[0]), dtype=bool)
    for x, y in zip(a, b, strict=True):
        greater |= equal & (x > y)
        equal &= x == y
    return greater


def distinct(names: Sequence[str]) -> list[str]:
    """``names`` without repeats, in first-seen order."""
    return list(dict.fromkeys(names))


def column(table: pa.Table, name: str) -> np.ndarray:
    """A column as a numpy array (nulls are not expected)."""
    return table.column(name).to_numpy()


class Transition:
    """Builds the next state and its delta; every change goes through ``apply_delta``, so the
    state the operator returns is exactly what the store rebuilds from the delta."""

    def __init__(self, state: State) -> None:
        self.state = dict(state)
        self._changes: dict[str, list[TableDelta]] = {}

    def table(self, name: str) -> pa.Table | None:
        return self.state.get(name)

    def change(
        self,
        name: str,
        key: Sequence[str],
        deletes: pa.Table | None = None,
        inserts: pa.Table | None = None,
        deleted: np.ndarray | None = None,
    ) -> None:
        """Delete the keys in ``deletes``, then insert ``inserts`` (keys absent after that).

        ``deleted`` may give the mask of the table's rows with those keys, when known.
        """
        if deletes is not None:
            deletes = deletes.select(list(key))
        if inserts is not None:
            inserts = with_key(inserts, key)
        delta = TableDelta(deletes, inserts)
        if delta.empty:
            return
        table = apply_delta(self.state.get(name), delta, deleted)
        if table is not None:
            self.state[name] = table
        self._changes.setdefault(name, []).append(delta)

    def replace(self, name: str, table: pa.Table, delta: TableDelta) -> None:
        """Take a table the caller already changed, with the delta that describes it."""
        self.state[name] = table
        if not delta.empty:
            self._changes.setdefault(name, []).append(delta)

    def delta(self) -> dict[str, TableDelta]:
        """One delta per changed table."""
        result = {}
        for name, deltas in self._changes.items():
            if len(deltas) == 1:
                result[name] = deltas[0]
            else:
                result[name] = collapse(deltas, key_of(self.state[name]))
        return result
