"""The stream-stream interval join: left records with right records of the same key nearby in time.

A left record at time ``t`` matches the right records of its join key whose time lies in
``[t - before, t + after]`` (inclusive).

``pick="latest"``: one row per left output key, defined by the left record with the greatest
(event time, partition, offset) of that key, joined with its match of greatest (event time,
partition, offset); ``how="inner"`` drops (and deletes) rows without a match, ``"left"`` keeps
them with null right columns.

``pick="all"``: every match (Kafka Streams' KStream-KStream join): one row per matching pair,
keyed by (left output key, right output key); when several pairs share that key, the greatest
(left order, right order) defines the row. Pairs only ever accumulate, so such a row is never
deleted. ``how="left"`` also writes the left records without a match, ``"outer"`` those of both
sides, once their window has closed: when the grace horizon passed the last time a match could
have (a left record's ``t + after``, a right one's ``t + before``), so no record that is not
late can match them any more and the row is final (no null row is written, then taken back).
Per output key the greatest such record defines the row: the left key with the right output
columns null (the right key included), or, for a right record, the right columns with every
left column null.

State: right records while a future left record can match them or a kept left record may need
them (event time >= horizon - before - after), and left records while a future right record can
still reach them (event time >= horizon - after; for an outer join, while a kept right record
may need them: horizon - before - after).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

from streaming.operators.batch import ORDER, RECORD, TIME, Batch, Source
from streaming.operators.batch import value_columns as user_columns
from streaming.operators.changes import combine, deletes, upserts
from streaming.operators.errors import BatchError, OperatorConfigError
from streaming.operators.event_time import CLOCK, arrive, empty_clock
from streaming.operators.interval_pairs import LEFT, RIGHT, all_pairs, unmatched_rows
from streaming.operators.step import Step
from streaming.operators.tables import Transition, as_of, column, distinct, supersede
from streaming.state import State, joint_codes, key_mask

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
        how: ``"inner"``, ``"left"`` or (with ``pick="all"``) ``"outer"``.
        pick: ``"latest"`` (one row per left key) or ``"all"`` (one row per pair).
        right_key: for ``pick="all"``, the right output key (right columns listed in
            ``right_columns``).
        left_columns: the left columns to keep (default: all user columns).
        grace_ms: the grace period of both inputs.
        prune_every_ms: how far the horizon advances between two prunings of the state
            (default: the grace period, at least a second).
    """

    left: Source
    right: Source
    on: tuple[str, ...]
    right_on: tuple[str, ...]
    key_columns: tuple[str, ...]
    right_columns: Mapping[str, str]
    before_ms: int
    after_ms: int
    how: Literal["inner", "left", "outer"] = "inner"
    pick: Literal["all", "latest"] = "all"
    right_key: tuple[str, ...] = ()
    left_columns: tuple[str, ...] | None = None
    grace_ms: int = DEFAULT_GRACE_MS
    prune_every_ms: int | None = None

    def __post_init__(self) -> None:
        if self.how not in ("inner", "left", "outer") or self.pick not in ("all", "latest"):
            msg = (
                "how must be 'inner', 'left' or 'outer' and pick 'all' or 'latest', "
                f"not {self.how!r} and {self.pick!r}"
            )
            raise OperatorConfigError(msg)
        if self.how == "outer" and self.pick == "latest":
            msg = "an outer join keeps every match (pick='all'); a latest match is inner or left"
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
        if self.prune_every_ms is not None and self.prune_every_ms <= 0:
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
    def partitioned_by(self) -> dict[str, tuple[str, ...]]:
        """Per input, the columns this operator keeps and combines its records by: a state split
        by input partition holds all of a key's records when each input is keyed by them."""
        return {self.left.name: self.on, self.right.name: self.right_on}

    @property
    def key(self) -> tuple[str, ...]:
        if self.pick == "latest":
            return self.key_columns
        return (*self.key_columns, *[self.right_columns[c] for c in self.right_key])

    @property
    def nullable_key(self) -> tuple[str, ...]:
        """The key columns a row may hold null: the side a row without a match lacks."""
        if self.pick == "latest" or self.how == "inner":
            return ()
        right = tuple(self.right_columns[c] for c in self.right_key)
        return right if self.how == "left" else (*self.key_columns, *right)

    def initial_state(self) -> State:
        return {CLOCK: empty_clock()}

    def _left_output(self, schema: pa.Schema) -> list[str]:
        chosen = self.left_columns or user_columns(schema.empty_table())
        names = [*self.key_columns, *[c for c in chosen if c not in self.key_columns]]
        self._check_clash(names)
        return names

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        return self._row_schema(inputs[self.left.name], inputs[self.right.name])

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
        left_stored = distinct([*kept, *self.on, *ORDER])
        right_stored = distinct([*self.right_on, *self.right_columns, *ORDER])
        rights = arrivals.records[self.right.name].select(right_stored)
        if rights.num_rows:
            transition.change(RIGHT, RECORD, inserts=rights)
        lefts = arrivals.records[self.left.name].select(left_stored)
        if self.pick == "latest":
            parts = self._latest(transition, lefts, rights, kept, schema)
        else:
            parts = all_pairs(self, transition, lefts, rights, kept, schema)
            if self.how != "inner":
                horizons = (arrivals.previous_horizon, arrivals.horizon)
                parts += unmatched_rows(self, transition, horizons, kept, schema)
        if arrivals.crossed(self.prune_every_ms or max(self.grace_ms, 1000)):
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
        winners, _ = supersede(transition, LEFT, self.key_columns, lefts, ORDER)
        retained = transition.table(LEFT)
        rematch = winners
        if rights.num_rows and retained is not None:
            changed = rights.select(list(self.right_on)).rename_columns(list(self.on))
            affected = retained.filter(key_mask(retained, self.on, changed))
            others = affected.filter(~key_mask(affected, self.key_columns, winners))
            rematch = pa.concat_tables([winners, others.cast(winners.schema)])
        if rematch.num_rows == 0:
            return []
        picks = self._best_match(transition.table(RIGHT), rematch)
        out = self.assemble(rematch, transition.table(RIGHT), picks, kept, schema)
        matched = picks >= 0
        if self.how == "inner":
            gone = out.filter(~matched).select(list(self.key_columns))
            return [upserts(out.filter(matched)), deletes(gone, schema)]
        return [upserts(out)]

    def _best_match(self, rights: pa.Table | None, lefts: pa.Table) -> np.ndarray:
        """Per left row, the index in ``rights`` of its greatest match, or -1."""
        n = lefts.num_rows
        if rights is None or rights.num_rows == 0:
            return np.full(n, -1, dtype=np.int64)
        keys = lefts.select(list(self.on)).rename_columns(list(self.right_on))
        near = np.flatnonzero(key_mask(rights, self.right_on, keys))
        if len(near) == 0:
            return np.full(n, -1, dtype=np.int64)
        candidates = rights.take(pa.array(near))
        mine, theirs = joint_codes([lefts, candidates], [self.on, self.right_on])
        times = column(lefts, TIME)
        order = [column(candidates, name) for name in ORDER]
        picks = as_of(mine, times + self.after_ms, theirs, order)
        found = picks >= 0
        found[found] = order[0][picks[found]] >= times[found] - self.before_ms
        return np.where(found, near[np.maximum(picks, 0)], -1)

    def assemble(
        self,
        lefts: pa.Table,
        rights: pa.Table | None,
        picks: np.ndarray,
        kept: list[str],
        schema: pa.Schema,
    ) -> pa.Table:
        """Output rows: the ``kept`` left columns and the right columns of row ``picks``
        of ``rights`` (null where a pick is -1 or there are no rights)."""
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

    def _prune(self, transition: Transition, horizon: int) -> None:
        """Forget records no future record can reach (see the module docstring)."""
        lefts = transition.table(LEFT)
        if lefts is not None and lefts.num_rows:
            reach = horizon - self.after_ms
            if self.how == "outer":  # an unmatched right record's check needs its lefts
                reach -= self.before_ms
            gone = lefts.filter(column(lefts, TIME) < reach)
            key = self.key_columns if self.pick == "latest" else RECORD
            transition.change(LEFT, key, deletes=gone)
        rights = transition.table(RIGHT)
        if rights is not None and rights.num_rows:
            reach = horizon - self.before_ms - self.after_ms
            transition.change(RIGHT, RECORD, deletes=rights.filter(column(rights, TIME) < reach))
