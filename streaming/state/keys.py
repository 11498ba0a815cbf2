"""Row selection by key on Arrow tables: membership, integer key codes, the greatest row per key.

Key codes number the distinct keys of a few tables jointly (equal keys, equal codes), so joins
and per-key maxima run as numpy sorts and binary searches instead of hash joins.
"""

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


def joint_codes(tables: Sequence[pa.Table], keys: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """Integer codes for the keys of several tables: equal keys get equal codes.

    ``keys[i]`` names the key columns of ``tables[i]`` (same count and types, in order).
    Nulls are a key value of their own.
    """
    sizes = [t.num_rows for t in tables]
    combined: np.ndarray | None = None
    for position in range(len(keys[0])):
        first = tables[0].schema.field(keys[0][position]).type
        chunks = []
        for table, names in zip(tables, keys, strict=True):
            column = table.column(names[position])
            if column.type != first:
                column = column.cast(first)
            chunks.extend(column.chunks)
        values = pa.concat_arrays(chunks) if chunks else pa.array([], first)
        codes = pc.dictionary_encode(values, null_encoding="encode").indices
        codes = codes.to_numpy(zero_copy_only=False).astype(np.int64)
        if combined is None:
            combined = codes
        else:
            combined = combined * (int(codes.max(initial=0)) + 1) + codes
            combined = np.unique(combined, return_inverse=True)[1].astype(np.int64)
    assert combined is not None
    return np.split(combined, np.cumsum(sizes)[:-1])


def last_per_key(table: pa.Table, key: Sequence[str], order: Sequence[str]) -> np.ndarray:
    """Indices of the row with the greatest ``order`` (compared column by column) per key.

    Ties on ``order`` go to the row that comes later in ``table``. The indices come back in
    ascending order, so the result keeps the table's row order. ``order`` columns hold no nulls.
    """
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    (codes,) = joint_codes([table], [key])
    columns = [table.column(name).to_numpy() for name in reversed(order)]
    ranked = np.lexsort((*columns, codes))
    ends = np.ones(len(ranked), dtype=bool)
    ends[:-1] = codes[ranked[1:]] != codes[ranked[:-1]]
    return np.sort(ranked[ends])
