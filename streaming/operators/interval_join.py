"""The stream-stream interval join: left records with right records of the same key nearby in time.

A left record at time ``t`` matches the right records of its join key whose time lies in
``[t - before, t + after]`` (inclusive).

``pick="latest"``: one row per left output key, defined by the left record with the greatest
(event time, partition, offset) of that key, joined with its match of greatest (event time,
partition, offset); ``how="inner"`` drops (and deletes) rows without a match, ``"left"`` keeps
them with null right columns.

``pick="all"``: one row per matching pair, keyed by (left output key, right output key); when
several pairs share that key, the greatest (left order, right order) defines the row. Pairs only
ever accumulate, so such a row is never deleted. With ``how="left"``, a left output key whose
greatest left record has no match at all gets one row with null right columns (right key null),
deleted once that record finds a match.

State: right records while a future left record can match them or a kept left record may need
them (event time >= horizon - before - after), and left records while a future right record can
still reach them (event time >= horizon - after).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from streaming.operators.batch import OFFSET, ORDER, PARTITION, TIME, Batch, Source
from streaming.operators.batch import value_columns as user_columns
from streaming.operators.changes import combine, deletes, upserts
from streaming.operators.errors import BatchError, OperatorConfigError
from streaming.operators.event_time import CLOCK, arrive, empty_clock
from streaming.operators.step import Step
from streaming.operators.tables import Transition, column, supersede
from streaming.state import State, key_mask, last_per_key

LEFT = "left"
RIGHT = "right"
RECORD = (PARTITION, OFFSET)
DEFAULT_GRACE_MS = 600_000


@dataclass(frozen=True)
class IntervalJoin:
    """Join left records with right records of the same key within a time bound.

    Attributes:
        left: the left stream.
        right: the right stream.
        on: the left columns holding the join key.
        right_on: the right columns holding the join key, matched to ``on`` in order.
        key_columns: the left output key, e.g. ``("click_id",)``.
        right_columns: right column -> output column name, for the right values to add.
        before_ms: how far before the left record's time a match may be.
        after_ms: how far after the left record's time a match may be.
        how: ``"inner"`` or ``"left"``.
        pick: ``"latest"`` (one row per left key) or ``"all"`` (one row per pair).
        right_key: for ``pick="all"``, the right output key (right columns listed in
            ``right_columns``).
        left_columns: the left columns to keep (default: all user columns).
        grace_ms: the grace period of both inputs.
        prune_every_ms: how much the horizon advances between two prunings of the state.
    """

    left: Source
    right: Source
    on: tuple[str, ...]
    right_on: tuple[str, ...]
    key_columns: tuple[str, ...]
    right_columns: Mapping[str, str]
    before_ms: int
    after_ms: int
    how: Literal["inner", "left"] = "inner"
    pick: Literal["all", "latest"] = "all"
    right_key: tuple[str, ...] = ()
    left_columns: tuple[str, ...] | None = None
    grace_ms: int = DEFAULT_GRACE_MS
    prune_every_ms: int = 60_000

    def __post_init__(self) -> None:
        if self.how not in ("inner", "left") or self.pick not in ("all", "latest"):
            msg = (
                "how must be 'inner' or 'left' and pick 'all' or 'latest', "
                f"not {self.how!r} and {self.pick!r}"
            )
            raise OperatorConfigError(msg)
        if not self.on or len(self.on) != len(self.right_on):
            msg = "on and right_on must name the same number (at least one) of columns"
            raise OperatorConfigError(msg)
        if not self.key_columns:
            msg = "the join needs a left output key (key_columns), e.g. ('click_id',)"
            raise OperatorConfigError(msg)
        if self.before_ms < 0 or self.after_ms < 0 or self.grace_ms < 0:
            msg = "before_ms, after_ms and grace_ms must be zero or more"
            raise OperatorConfigError(msg)
        if self.prune_every_ms <= 0:
            msg = "prune_every_ms must be positive"
            raise OperatorConfigError(msg)
        if self.left.name == self.right.name:
            msg = "the left and right inputs must be different inputs"
            raise OperatorConfigError(msg)
        if self.pick == "all":
            missing = [c for c in self.right_key if c not in self.right_columns]
            if not self.right_key or missing:
                msg = (
                    "pick='all' needs right_key: right columns (also listed in right_columns) "
                    "that name each right record, e.g. right_key=('search_id',)"
                )
                raise OperatorConfigError(msg)
        outputs = list(self.right_columns.values())
        if len(set(outputs)) != len(outputs) or any(n.startswith("_") for n in outputs):
            msg = f"right output columns {outputs} must be distinct and not start with '_'"
            raise OperatorConfigError(msg)
        if self.left_columns is not None:
            self._check_clash(self.left_columns)

    def _check_clash(self, left_columns: tuple[str, ...] | list[str]) -> None:
        clash = set(left_columns) & set(self.right_columns.values())
        if clash:
            msg = f"right output columns {sorted(clash)} clash with left columns; rename them"
            raise OperatorConfigError(msg)

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.left.name, self.right.name)

    @property
    def key(self) -> tuple[str, ...]:
        if self.pick == "latest":
            return self.key_columns
        return (*self.key_columns, *[self.right_columns[c] for c in self.right_key])

    def initial_state(self) -> State:
        return {CLOCK: empty_clock()}

    def _left_output(self, schema: pa.Schema) -> list[str]:
        chosen = self.left_columns or user_columns(schema.empty_table())
        names = [*self.key_columns, *[c for c in chosen if c not in self.key_columns]]
        self._check_clash(names)
        return names

    def _row_schema(self, left: pa.Schema, right: pa.Schema) -> pa.Schema:
        fields = [left.field(name) for name in self._left_output(left)]
        for source_name, output in self.right_columns.items():
            if source_name not in right.names:
                msg = f"right input {self.right.name!r} has no column {source_name!r}"
                raise BatchError(msg)
            fields.append(pa.field(output, right.field(source_name).type))
        return pa.schema(fields)

    def step(self, state: State, batch: Batch) -> Step:
        arrivals = arrive(state.get(CLOCK), batch, [self.left, self.right], self.grace_ms)
        transition = Transition(state)
        transition.replace(CLOCK, arrivals.clock, arrivals.clock_delta)
        left_schema = batch.records[self.left.name].schema
        schema = self._row_schema(left_schema, batch.records[self.right.name].schema)
        kept = self._left_output(left_schema)
        left_stored = _unique([*kept, *self.on, *ORDER])
        right_stored = _unique([*self.right_on, *self.right_columns, *ORDER])
        rights = arrivals.records[self.right.name].select(right_stored)
        if rights.num_rows:
            transition.change(RIGHT, RECORD, inserts=rights)
        lefts = arrivals.records[self.left.name].select(left_stored)
        if self.pick == "latest":
            parts = self._latest(transition, lefts, rights, kept, schema)
        else:
            parts = self._all(transition, lefts, rights, kept, schema)
        if arrivals.crossed(self.prune_every_ms):
            self._prune(transition, arrivals.horizon)  # type: ignore[arg-type]
        return Step(
            transition.state, combine(parts, schema), arrivals.dead_letters, transition.delta()
        )

    # pick="latest"

    def _latest(
        self,
        transition: Transition,
        lefts: pa.Table,
        rights: pa.Table,
        kept: list[str],
        schema: pa.Schema,
    ) -> list[pa.Table]:
        winners = self._winners(transition, lefts)
        retained = transition.table(LEFT)
        rematch = winners
        if rights.num_rows and retained is not None:
            changed = rights.select(list(self.right_on)).rename_columns(list(self.on))
            affected = key_mask(retained, self.on, changed)
            if winners.num_rows:
                affected |= key_mask(retained, self.key_columns, winners)
            rematch = retained.filter(affected)
        if rematch.num_rows == 0:
            return []
        picks = self._best_match(transition.table(RIGHT), rematch)
        out = self._assemble(rematch, transition.table(RIGHT), picks, kept, schema)
        matched = picks >= 0
        if self.how == "inner":
            gone = out.filter(~matched).select(list(self.key_columns))
            return [upserts(out.filter(matched)), deletes(gone, schema)]
        return [upserts(out)]

    def _winners(self, transition: Transition, records: pa.Table) -> pa.Table:
        winners, _ = supersede(transition, LEFT, self.key_columns, records, ORDER)
        return winners

    def _best_match(self, rights: pa.Table | None, lefts: pa.Table) -> np.ndarray:
        """Per left row, the index in ``rights`` of its greatest match, or -1."""
        n = lefts.num_rows
        keys = lefts.select(list(self.on)).rename_columns(list(self.right_on))
        candidates_mask = (
            key_mask(rights, self.right_on, keys) if rights is not None else np.zeros(0, bool)
        )
        picks = np.full(n, -1, dtype=np.int64)
        if rights is None or not candidates_mask.any():
            return picks
        right = _frame(rights.filter(candidates_mask), self.right_on, self.on)
        right["__right"] = np.flatnonzero(candidates_mask)
        left = lefts.select([*self.on, TIME]).to_pandas()
        left["__row"] = np.arange(n)
        left["__reach"] = left[TIME] + self.after_ms
        _align(left, right, self.on)
        left = left.sort_values("__reach", kind="stable")
        right = right.sort_values(["__rtime", PARTITION, OFFSET], kind="stable")
        joined = pd.merge_asof(
            left,
            right[[*self.on, "__rtime", "__right"]],
            left_on="__reach",
            right_on="__rtime",
            by=list(self.on),
            direction="backward",
            allow_exact_matches=True,
        )
        ok = joined["__right"].notna().to_numpy()
        ok &= (joined["__rtime"] >= joined[TIME] - self.before_ms).fillna(False).to_numpy()
        picks[joined["__row"].to_numpy()[ok]] = joined["__right"].to_numpy()[ok]
        return picks

    def _assemble(
        self,
        lefts: pa.Table,
        rights: pa.Table | None,
        picks: np.ndarray,
        kept: list[str],
        schema: pa.Schema,
    ) -> pa.Table:
        n = lefts.num_rows
        columns = list(lefts.select(kept).columns)
        if rights is None:
            columns += [pa.nulls(n, schema.field(out).type) for out in self.right_columns.values()]
        else:
            taken = rights.take(pa.array(picks, mask=picks < 0))
            columns += [
                taken.column(name).cast(schema.field(out).type)
                for name, out in self.right_columns.items()
            ]
        return pa.Table.from_arrays(columns, schema=schema)

    # pick="all"

    def _all(
        self,
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
        lk = list(self.key_columns)
        touched = [lefts.select(lk)]
        if rights.num_rows:
            reached = self._pairs(all_lefts, rights)
            touched.append(all_lefts.take(pa.array(reached["__left"].to_numpy())).select(lk))
        touched_keys = pa.concat_tables(touched)
        if touched_keys.num_rows == 0:
            return []
        group = all_lefts.filter(key_mask(all_lefts, lk, touched_keys))
        pairs = self._pairs(group, all_rights)
        parts: list[pa.Table] = []
        if len(pairs):
            assert all_rights is not None
            parts.append(self._pair_rows(group, all_rights, pairs, kept, schema))
        if self.how == "left":
            parts += self._null_rows(group, pairs, kept, schema)
        return parts

    def _pairs(self, lefts: pa.Table, rights: pa.Table | None) -> pd.DataFrame:
        """Matching (``__left``, ``__right``) row index pairs between two tables."""
        empty = pd.DataFrame({"__left": [], "__right": []}, dtype=np.int64)
        if rights is None or rights.num_rows == 0 or lefts.num_rows == 0:
            return empty
        left = lefts.select([*self.on, TIME]).to_pandas()
        left["__left"] = np.arange(lefts.num_rows)
        right = _frame(rights, self.right_on, self.on)
        right["__right"] = np.arange(rights.num_rows)
        _align(left, right, self.on)
        joined = left.merge(right[[*self.on, "__rtime", "__right"]], on=list(self.on))
        inside = (joined["__rtime"] >= joined[TIME] - self.before_ms) & (
            joined["__rtime"] <= joined[TIME] + self.after_ms
        )
        return joined.loc[inside, ["__left", "__right"]].reset_index(drop=True)

    def _pair_rows(
        self,
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
        identity = left_rows.select(list(self.key_columns))
        right_names = []
        for name in self.right_key:
            right_names.append(f"__rk.{name}")
            identity = identity.append_column(right_names[-1], right_rows.column(name))
        order = []
        for side, rows in (("l", left_rows), ("r", right_rows)):
            for name in ORDER:
                order.append(f"__{side}{name}")
                identity = identity.append_column(order[-1], rows.column(name))
        best = last_per_key(identity, [*self.key_columns, *right_names], order)
        chosen = left_rows.take(pa.array(best))
        return upserts(self._assemble(chosen, rights, ri[best], kept, schema))

    def _null_rows(
        self, group: pa.Table, pairs: pd.DataFrame, kept: list[str], schema: pa.Schema
    ) -> list[pa.Table]:
        """Left join: per touched left key, a null row while its greatest record has no match."""
        lk = list(self.key_columns)
        greatest = last_per_key(group, lk, ORDER)
        paired = np.zeros(group.num_rows, dtype=bool)
        paired[pairs["__left"].to_numpy()] = True
        lonely = greatest[~paired[greatest]]
        found = greatest[paired[greatest]]
        out = self._assemble(
            group.take(pa.array(lonely)), None, np.full(len(lonely), -1), kept, schema
        )
        gone = group.take(pa.array(found)).select(lk)
        right_key = [self.right_columns[c] for c in self.right_key]
        for name in right_key:
            gone = gone.append_column(name, pa.nulls(gone.num_rows, schema.field(name).type))
        return [upserts(out), deletes(gone, schema)]

    def _prune(self, transition: Transition, horizon: int) -> None:
        """Forget records no future record can reach (see the module docstring)."""
        lefts = transition.table(LEFT)
        if lefts is not None and lefts.num_rows:
            gone = lefts.filter(column(lefts, TIME) < horizon - self.after_ms)
            key = self.key_columns if self.pick == "latest" else RECORD
            transition.change(LEFT, key, deletes=gone)
        rights = transition.table(RIGHT)
        if rights is not None and rights.num_rows:
            reach = horizon - self.before_ms - self.after_ms
            transition.change(RIGHT, RECORD, deletes=rights.filter(column(rights, TIME) < reach))


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _frame(rights: pa.Table, right_on: tuple[str, ...], on: tuple[str, ...]) -> pd.DataFrame:
    """The right side's join keys (renamed to the left's names) and order as a pandas frame."""
    frame = rights.select([*right_on, *ORDER]).to_pandas()
    frame = frame.rename(columns={**dict(zip(right_on, on, strict=True)), TIME: "__rtime"})
    return frame


def _align(left: pd.DataFrame, right: pd.DataFrame, on: tuple[str, ...]) -> None:
    for name in on:
        if right[name].dtype != left[name].dtype:
            right[name] = right[name].astype(left[name].dtype)
