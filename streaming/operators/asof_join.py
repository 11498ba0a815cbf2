"""The stream-table join as of event time (Kafka Streams' versioned KStream-KTable join).

Each stream record at time ``t`` joins the table row of its join key as of ``t``: the table
version with the greatest event time at or below ``t`` (ties to the higher partition, offset);
there is no match when no version exists or that version is a tombstone. ``how="left"`` keeps
unmatched stream records with null table columns, ``how="inner"`` leaves them out.

Output rows are keyed by a declared key of the stream (e.g. a transaction id). When several
stream records share an output key, the one with the greatest (event time, partition, offset)
defines the row. Event time comes first so that a record can be forgotten once it is below the
grace horizon: any later record of the same key is not late, hence above the horizon, hence
greater. Duplicates of one event carry one event time, and for them the higher offset wins.

A table record within grace that arrives after stream records it should have matched re-emits
their rows (an inner row may appear or disappear). State: the table versions still needed (per
key, every version above the horizon plus the greatest one at or below it, unless that is a
tombstone), and the defining stream record per output key while it is above the horizon.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

from streaming.operators.batch import (
    DELETE,
    OFFSET,
    ORDER,
    PARTITION,
    RECORD,
    TIME,
    Batch,
    Source,
)
from streaming.operators.batch import value_columns as user_columns
from streaming.operators.changes import combine, deletes, upserts
from streaming.operators.errors import BatchError, OperatorConfigError
from streaming.operators.event_time import CLOCK, arrive, empty_clock
from streaming.operators.step import Step
from streaming.operators.tables import Transition, as_of, column, distinct, fetch, supersede
from streaming.state import State, joint_codes, key_mask

VERSIONS = "versions"
STREAM = "stream"
DEFAULT_GRACE_MS = 600_000


@dataclass(frozen=True)
class AsOfJoin:
    """Join each stream record with the table's row as of its event time.

    Attributes:
        stream: the stream input.
        table: the table input (a changelog: tombstones delete).
        on: the stream columns holding the join key.
        table_key: the table's key columns, matched to ``on`` in order.
        key_columns: the output key (stream columns), e.g. ``("txn_id",)``.
        table_columns: table column -> output column name, for the table values to add.
        stream_columns: the stream columns to keep (default: all user columns).
        how: ``"left"`` or ``"inner"``.
        grace_ms: the grace period of both inputs.
        prune_every_ms: how far the horizon advances between two prunings of the state
            (default: the grace period, at least a second). Pruning scans the state, so it
            runs once per period of event time; the state holds at most that much extra.
    """

    stream: Source
    table: Source
    on: tuple[str, ...]
    table_key: tuple[str, ...]
    key_columns: tuple[str, ...]
    table_columns: Mapping[str, str]
    stream_columns: tuple[str, ...] | None = None
    how: Literal["inner", "left"] = "left"
    grace_ms: int = DEFAULT_GRACE_MS
    prune_every_ms: int | None = None

    def __post_init__(self) -> None:
        if self.how not in ("inner", "left"):
            msg = f"how must be 'inner' or 'left', not {self.how!r}"
            raise OperatorConfigError(msg)
        if not self.on or len(self.on) != len(self.table_key):
            msg = "on and table_key must name the same number (at least one) of columns"
            raise OperatorConfigError(msg)
        if not self.key_columns:
            msg = "the join needs an output key (key_columns), e.g. ('txn_id',)"
            raise OperatorConfigError(msg)
        if self.stream.name == self.table.name:
            msg = "the stream and the table must be different inputs"
            raise OperatorConfigError(msg)
        if self.grace_ms < 0 or (self.prune_every_ms is not None and self.prune_every_ms <= 0):
            msg = "grace_ms must be >= 0 and prune_every_ms > 0"
            raise OperatorConfigError(msg)
        outputs = list(self.table_columns.values())
        if len(set(outputs)) != len(outputs) or any(n.startswith("_") for n in outputs):
            msg = f"table output columns {outputs} must be distinct and not start with '_'"
            raise OperatorConfigError(msg)
        if self.stream_columns is not None:
            self._check_clash(self.stream_columns)

    def _check_clash(self, stream_columns: tuple[str, ...] | list[str]) -> None:
        clash = set(stream_columns) & set(self.table_columns.values())
        if clash:
            msg = f"table output columns {sorted(clash)} clash with stream columns; rename them"
            raise OperatorConfigError(msg)

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.stream.name, self.table.name)

    @property
    def partitioned_by(self) -> dict[str, tuple[str, ...]]:
        """Per input, the columns this operator keeps and combines its records by: a state split
        by input partition holds all of a key's records when each input is keyed by them."""
        return {self.stream.name: self.on, self.table.name: self.table_key}

    @property
    def key(self) -> tuple[str, ...]:
        return self.key_columns

    def initial_state(self) -> State:
        return {CLOCK: empty_clock()}

    def _stream_output(self, schema: pa.Schema) -> list[str]:
        chosen = self.stream_columns or user_columns(schema.empty_table())
        names = [*self.key_columns, *[c for c in chosen if c not in self.key_columns]]
        self._check_clash(names)
        return names

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        return self._row_schema(inputs[self.stream.name], inputs[self.table.name])

    def _row_schema(self, stream: pa.Schema, table: pa.Schema) -> pa.Schema:
        fields = [stream.field(name) for name in self._stream_output(stream)]
        for source_name, output in self.table_columns.items():
            if source_name not in table.names:
                msg = f"table input {self.table.name!r} has no column {source_name!r}"
                raise BatchError(msg)
            fields.append(pa.field(output, table.field(source_name).type))
        return pa.schema(fields)

    def step(self, state: State, batch: Batch) -> Step:
        arrivals = arrive(state.get(CLOCK), batch, [self.stream, self.table], self.grace_ms)
        transition = Transition(state)
        transition.replace(CLOCK, arrivals.clock, arrivals.clock_delta)
        stream_schema = batch.records[self.stream.name].schema
        schema = self._row_schema(stream_schema, batch.records[self.table.name].schema)
        kept = self._stream_output(stream_schema)
        stored = [*kept, *[c for c in self.on if c not in kept], *ORDER]
        versions = arrivals.records[self.table.name]
        if versions.num_rows:
            columns = [*self.table_key, *ORDER, DELETE, *self.table_columns]
            transition.change(VERSIONS, RECORD, inserts=versions.select(distinct(columns)))
        winners = self._winners(transition, arrivals.records[self.stream.name].select(stored))
        rematch = self._rematch(transition, winners, versions)
        parts = []
        if rematch.num_rows:
            matched, rows = self._match(transition.table(VERSIONS), rematch)
            table_values = [
                rows.column(name).cast(schema.field(output).type)
                for name, output in self.table_columns.items()
            ]
            out = pa.Table.from_arrays(
                [*rematch.select(kept).columns, *table_values], schema=schema
            )
            if self.how == "inner":
                parts.append(upserts(out.filter(matched)))
                parts.append(deletes(out.filter(~matched).select(list(self.key_columns)), schema))
            else:
                parts.append(upserts(out))
        if arrivals.crossed(self.prune_every_ms or max(self.grace_ms, 1000)):
            self._prune(transition, arrivals.horizon)  # type: ignore[arg-type]
        changes = combine(parts, schema)
        return Step(transition.state, changes, arrivals.dead_letters, transition.delta())

    def _winners(self, transition: Transition, records: pa.Table) -> pa.Table:
        """The batch's stream records that now define their output key's row."""
        winners, _ = supersede(transition, STREAM, self.key_columns, records, ORDER)
        return winners

    def _rematch(self, transition: Transition, winners: pa.Table, versions: pa.Table) -> pa.Table:
        """The stream rows to join again: new winners, and kept rows whose key got a version."""
        retained = transition.table(STREAM)
        if versions.num_rows == 0 or retained is None:
            return winners
        changed_keys = versions.select(list(self.table_key)).rename_columns(list(self.on))
        affected = retained.filter(key_mask(retained, self.on, changed_keys))
        if winners.num_rows == 0:
            return affected
        others = affected.filter(~key_mask(affected, self.key_columns, winners))
        return pa.concat_tables([winners, others.cast(winners.schema)])

    def _match(self, versions: pa.Table | None, stream: pa.Table) -> tuple[np.ndarray, pa.Table]:
        """Per stream row, whether it has a live version as of its time, and that version."""
        n = stream.num_rows
        keys = stream.select(list(self.on)).rename_columns(list(self.table_key))
        candidates = fetch(versions, self.table_key, keys)
        if candidates is None or candidates.num_rows == 0:
            nulls = pa.table({name: pa.nulls(n) for name in self.table_columns})
            return np.zeros(n, dtype=bool), nulls
        mine, theirs = joint_codes([stream, candidates], [self.on, self.table_key])
        picks = as_of(
            mine, column(stream, TIME), theirs, [column(candidates, name) for name in ORDER]
        )
        rows = candidates.take(pa.array(picks, mask=picks < 0))
        live = ~rows.column(DELETE).fill_null(True).to_numpy(zero_copy_only=False)
        return live, rows

    def _prune(self, transition: Transition, horizon: int) -> None:
        """Forget what no record above ``horizon`` can reach."""
        retained = transition.table(STREAM)
        if retained is not None and retained.num_rows:
            old = column(retained, TIME) < horizon
            if old.any():
                transition.change(STREAM, self.key_columns, deletes=retained.filter(old))
        versions = transition.table(VERSIONS)
        if versions is not None and versions.num_rows:
            drop = shadowed(versions, self.table_key, horizon)
            if drop.any():
                transition.change(VERSIONS, RECORD, deletes=versions.filter(drop))


def shadowed(versions: pa.Table, key: tuple[str, ...], horizon: int) -> np.ndarray:
    """The versions no record at or above ``horizon`` can match: per key, every version at or
    below the horizon except the greatest, and that one too when it is a tombstone."""
    times = column(versions, TIME)
    low = times <= horizon
    if not low.any():
        return low
    (codes,) = joint_codes([versions], [key])
    tombstone = versions.column(DELETE).to_numpy(zero_copy_only=False)
    several = np.bincount(codes)[codes] > 1
    rows = np.flatnonzero(low & (several | tombstone))
    if len(rows) == 0:
        return np.zeros(versions.num_rows, dtype=bool)
    ranked = rows[
        np.lexsort(
            (
                column(versions, OFFSET)[rows],
                column(versions, PARTITION)[rows],
                times[rows],
                codes[rows],
            )
        )
    ]
    floor = np.ones(len(ranked), dtype=bool)
    floor[:-1] = codes[ranked[1:]] != codes[ranked[:-1]]
    drop = np.zeros(versions.num_rows, dtype=bool)
    drop[ranked] = True
    keep = ranked[floor & ~tombstone[ranked]]
    drop[keep] = False
    return drop
