"""The interval join's ``pick="all"``: one row per (left key, right key), the greatest pair,
and, for left and outer joins, the records left without a match once their window closed.

Rows of a left key are recomputed from the kept records whenever the key gets a record or a new
pair. Kept records suffice: a pair of a forgotten left record is smaller than any pair of a kept
one, and every match of a kept left record is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from streaming.operators.batch import ORDER, RECORD, TIME
from streaming.operators.changes import upserts
from streaming.operators.tables import Transition
from streaming.state import key_mask, last_per_key

if TYPE_CHECKING:
    import pandas as pd

    from streaming.operators.interval_join import IntervalJoin

LEFT = "left"
RIGHT = "right"


def all_pairs(
    join: IntervalJoin,
    transition: Transition,
    lefts: pa.Table,
    rights: pa.Table,
    kept: list[str],
    schema: pa.Schema,
) -> list[pa.Table]:
    """Rows of every left key that got a record or a new pair, recomputed from state.

    Kept records suffice: a pair of a forgotten left record is smaller than any pair of a
    kept one, and a kept left record's matches are all kept.
    """
    if lefts.num_rows:
        transition.change(LEFT, RECORD, inserts=lefts)
    all_lefts = transition.table(LEFT)
    all_rights = transition.table(RIGHT)
    if all_lefts is None or all_lefts.num_rows == 0:
        return []
    lk = list(join.key_columns)
    touched = [lefts.select(lk)]
    if rights.num_rows:
        reached = matching_pairs(join, all_lefts, rights)
        touched.append(all_lefts.take(pa.array(reached["__left"].to_numpy())).select(lk))
    touched_keys = pa.concat_tables(touched)
    if touched_keys.num_rows == 0:
        return []
    group = all_lefts.filter(key_mask(all_lefts, lk, touched_keys))
    pairs = matching_pairs(join, group, all_rights)
    if len(pairs) == 0:
        return []
    assert all_rights is not None
    return [pair_rows(join, group, all_rights, pairs, kept, schema)]


def matching_pairs(
    join: IntervalJoin, lefts: pa.Table | None, rights: pa.Table | None
) -> pd.DataFrame:
    """Matching (``__left``, ``__right``) row index pairs between two tables."""
    # Imported here: pandas is a fifth of a second that every Spark Python worker importing the
    # authoring API would otherwise pay, and only the interval join uses it.
    import pandas as pd

    empty = pd.DataFrame({"__left": [], "__right": []}, dtype=np.int64)
    if rights is None or lefts is None or rights.num_rows == 0 or lefts.num_rows == 0:
        return empty
    left = lefts.select([*join.on, TIME]).to_pandas()
    left["__left"] = np.arange(lefts.num_rows)
    right = _frame(rights, join.right_on, join.on)
    right["__right"] = np.arange(rights.num_rows)
    _align(left, right, join.on)
    joined = left.merge(right[[*join.on, "__rtime", "__right"]], on=list(join.on))
    inside = (joined["__rtime"] >= joined[TIME] - join.before_ms) & (
        joined["__rtime"] <= joined[TIME] + join.after_ms
    )
    return joined.loc[inside, ["__left", "__right"]].reset_index(drop=True)


def pair_rows(
    join: IntervalJoin,
    lefts: pa.Table,
    rights: pa.Table,
    pairs: pd.DataFrame,
    kept: list[str],
    schema: pa.Schema,
) -> pa.Table:
    """One upsert per (left key, right key): the greatest of its pairs."""
    li = pairs["__left"].to_numpy()
    ri = pairs["__right"].to_numpy()
    left_rows = lefts.take(pa.array(li))
    right_rows = rights.take(pa.array(ri))
    identity = left_rows.select(list(join.key_columns))
    right_names = []
    for name in join.right_key:
        right_names.append(f"__rk.{name}")
        identity = identity.append_column(right_names[-1], right_rows.column(name))
    order = []
    for side, rows in (("l", left_rows), ("r", right_rows)):
        for name in ORDER:
            order.append(f"__{side}{name}")
            identity = identity.append_column(order[-1], rows.column(name))
    best = last_per_key(identity, [*join.key_columns, *right_names], order)
    chosen = left_rows.take(pa.array(best))
    return upserts(join.assemble(chosen, rights, ri[best], kept, schema))


def unmatched_rows(
    join: IntervalJoin,
    transition: Transition,
    horizons: tuple[int | None, int | None],
    kept: list[str],
    schema: pa.Schema,
) -> list[pa.Table]:
    """Left (and, for an outer join, right) records whose window the horizon closed in this
    step without a match: per output key, the greatest of them as a row with the other side's
    columns null. No record that is not late can match them any more, so the row is final."""
    before, after = horizons
    if after is None or after == before:
        return []
    lefts, rights = transition.table(LEFT), transition.table(RIGHT)
    parts = []
    lonely = _alone(join, LEFT, lefts, rights, join.after_ms, before, after)
    if lonely is not None:
        nothing = np.full(lonely.num_rows, -1)
        parts.append(upserts(join.assemble(lonely, None, nothing, kept, schema)))
    if join.how == "outer":
        lonely = _alone(join, RIGHT, rights, lefts, join.before_ms, before, after)
        if lonely is not None:
            parts.append(upserts(_right_only(join, lonely, schema)))
    return parts


def _alone(
    join: IntervalJoin,
    side: str,
    records: pa.Table | None,
    others: pa.Table | None,
    reach: int,
    since: int | None,
    until: int,
) -> pa.Table | None:
    """The ``side`` records whose last matching time (event time + ``reach``) the horizon
    passed in this step (from ``since`` to ``until``), without a match among ``others``: per
    output key the greatest."""
    if records is None or records.num_rows == 0:
        return None
    last = records.column(TIME).to_numpy() + reach
    closed = last < until
    if since is not None:
        closed &= last >= since
    if not closed.any():
        return None
    candidates = records.filter(pa.array(closed))
    if side == LEFT:
        pairs = matching_pairs(join, candidates, others)["__left"]
    else:
        pairs = matching_pairs(join, others, candidates)["__right"]
    lonely = candidates.filter(~np.isin(np.arange(candidates.num_rows), pairs.to_numpy()))
    key = join.key_columns if side == LEFT else join.right_key
    return lonely.take(pa.array(last_per_key(lonely, list(key), ORDER)))


def _right_only(join: IntervalJoin, rights: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows of right records alone: the right columns, every left column null."""
    outputs = dict(join.right_columns.items())
    columns = []
    for field in schema:
        source = next((c for c, out in outputs.items() if out == field.name), None)
        if source is None:
            columns.append(pa.nulls(rights.num_rows, field.type))
        else:
            columns.append(rights.column(source).cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _frame(rights: pa.Table, right_on: tuple[str, ...], on: tuple[str, ...]) -> pd.DataFrame:
    """The right side's join keys (renamed to the left's names) and order as a pandas frame."""
    frame = rights.select([*right_on, *ORDER]).to_pandas()
    return frame.rename(columns={**dict(zip(right_on, on, strict=True)), TIME: "__rtime"})


def _align(left: pd.DataFrame, right: pd.DataFrame, on: tuple[str, ...]) -> None:
    for name in on:
        if right[name].dtype != left[name].dtype:
            right[name] = right[name].astype(left[name].dtype)
