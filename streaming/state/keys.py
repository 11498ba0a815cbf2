"""Row selection by key on Arrow tables: membership and the greatest row per key."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def key_mask(table: pa.Table, key: Sequence[str], keys: pa.Table) -> np.ndarray:
    """A boolean mask of the rows of ``table`` whose key occurs in ``keys``."""
    if table.num_rows == 0 or keys.num_rows == 0:
        return np.zeros(table.num_rows, dtype=bool)
    if len(key) == 1:
        column = table.column(key[0])
        found = pc.is_in(column, value_set=keys.column(key[0]).cast(column.type))
        return found.fill_null(False).to_numpy(zero_copy_only=False)
    rows = table.select(list(key)).append_column("__row", pa.array(np.arange(table.num_rows)))
    distinct = keys.select(list(key)).group_by(list(key)).aggregate([])
    hit = rows.join(distinct, keys=list(key), join_type="left semi")
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[hit.column("__row").to_numpy()] = True
    return mask


def last_per_key(table: pa.Table, key: Sequence[str], order: Sequence[str]) -> np.ndarray:
    """Indices of the row with the greatest ``order`` (compared column by column) per key.

    Ties on ``order`` go to the row that comes later in ``table``. The indices come back in
    ascending order, so the result keeps the table's row order.
    """
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    sort_keys = [(name, "ascending") for name in order]
    ordered = pc.sort_indices(table.select(list(order)), sort_keys=sort_keys) if order else None
    positions = np.arange(table.num_rows)
    ranked = table.select(list(key)).take(ordered) if ordered is not None else table.select(key)
    ranked = ranked.append_column("__pos", pa.array(positions))
    best = ranked.group_by(list(key)).aggregate([("__pos", "max")]).column("__pos_max")
    picked = best.to_numpy()
    if ordered is None:
        return np.sort(picked)
    return np.sort(ordered.to_numpy()[picked])
