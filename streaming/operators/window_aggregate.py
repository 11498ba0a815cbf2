"""Windowed aggregation: typed aggregates per key and event-time window.

The output has one row per (key..., window_start) holding the aggregate of the window's records
so far, and ``window_end``; a session's row is keyed by (key..., session_start), its first
record's time, and holds ``session_end``, its last record's time (Kafka Streams' session window).
A record within grace re-aggregates its window; sessions it bridges merge (the rows of the
merged-away sessions are deleted). With a retention, a window whose
``end + retention`` is at or below the grace horizon is deleted from the output; this deletion is
part of the definition, so every replay deletes the same windows at the same prefix. Without a
retention windows stay forever, and the state forgets a window once it is final.

``FinalWindows`` writes a window's row once, when it becomes final (its end at or below the grace
horizon), and never changes it: Kafka Streams' ``suppress(untilWindowCloses)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.operators.aggregations import (
    Aggregation,
    check_aggregations,
    finals,
    merge_partials,
    record_partials,
)
from streaming.operators.batch import TIME, Batch
from streaming.operators.changes import combine, deletes, upserts
from streaming.operators.errors import OperatorConfigError
from streaming.operators.folding import fold
from streaming.operators.keyed_input import KeyedInput
from streaming.operators.sliding import forget, slide
from streaming.operators.step import Step
from streaming.operators.tables import Transition, fetch
from streaming.operators.windows import (
    END,
    SESSION_END,
    SESSION_START,
    START,
    Session,
    Sliding,
    Window,
    assign,
    session_groups,
)
from streaming.state import State, key_mask

WINDOWS = "windows"
DEFAULT_GRACE_MS = 600_000


@dataclass(frozen=True)
class WindowedAggregate(KeyedInput):
    """Aggregates per key and window of a stream input.

    Attributes:
        source: the input (its ``time`` names the event-time column).
        key_columns: the grouping columns; the output key is these plus ``window_start``.
        window: ``Tumbling``, ``Hopping``, ``Session`` or ``Sliding``.
        aggregations: output column name -> aggregation.
        grace_ms: how far below its partition's stream time a record may be and still count.
        retention_ms: how long past the horizon a final window stays in the output (None:
            forever).
    """

    window: Window
    aggregations: Mapping[str, Aggregation]
    grace_ms: int = DEFAULT_GRACE_MS
    retention_ms: int | None = None

    described_as: ClassVar[str] = "a windowed aggregation"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.grace_ms < 0 or (self.retention_ms is not None and self.retention_ms < 0):
            msg = "grace and retention must be zero or more milliseconds"
            raise OperatorConfigError(msg)
        reserved = (SESSION_START, SESSION_END) if self.sessions else (START, END)
        check_aggregations(self.aggregations, (*self.key_columns, *reserved))

    @property
    def sessions(self) -> bool:
        return isinstance(self.window, Session)

    @property
    def key(self) -> tuple[str, ...]:
        """The output key: the key columns and the window's (or session's) start."""
        return (*self.key_columns, SESSION_START if self.sessions else START)

    @property
    def _state_key(self) -> tuple[str, ...]:
        """The key the state keeps windows by (sessions too: start, and end = last + gap)."""
        return (*self.key_columns, START)

    def step(self, state: State, batch: Batch) -> Step:
        arrivals, transition = self.begin(state, batch, self.grace_ms)
        records = arrivals.records[self.source.name]
        source_schema = batch.records[self.source.name].schema
        schema = self._row_schema(records, source_schema)
        parts: list[pa.Table] = []
        touched = None
        if records.num_rows:
            if self.sessions:
                touched, gone = self._sessions(transition, records)
                parts.append(deletes(self._output_key(gone), schema))
            elif isinstance(self.window, Sliding):
                touched = slide(
                    transition, records, self.window, self.key_columns, self.aggregations
                )
                transition.change(WINDOWS, self.key, deletes=touched, inserts=touched)
            else:
                touched = self._windows(transition, records)
        if isinstance(self.window, Sliding):
            forget(transition, self.window, self.key_columns, arrivals.horizon)
        if self.final:
            closed = self._close(transition, arrivals.horizon)
            parts = [upserts(self._rows(closed, source_schema))] if closed.num_rows else []
            changes = combine(parts, schema)
            return Step(transition.state, changes, arrivals.dead_letters, transition.delta())
        expired = self._expire(transition, arrivals.horizon)
        if touched is not None and touched.num_rows:
            if expired is not None and expired.num_rows:
                keep = ~key_mask(touched, self._state_key, expired)
                touched = touched.filter(keep)
            parts.append(upserts(self._rows(touched, source_schema)))
        if expired is not None and expired.num_rows:
            parts.append(deletes(self._output_key(expired), schema))
        changes = combine(parts, schema)
        return Step(transition.state, changes, arrivals.dead_letters, transition.delta())

    @property
    def final(self) -> bool:
        """Whether a window's row is written only once, when the window is final."""
        return False

    def _rows(self, partials: pa.Table, source_schema: pa.Schema) -> pa.Table:
        columns = {name: partials.column(name) for name in self.key_columns}
        if self.sessions:
            columns[SESSION_START] = partials.column(START)
            last = pc.subtract(partials.column(END), self.window.gap_ms)  # type: ignore[union-attr]
            columns[SESSION_END] = last.cast(pa.int64())
        else:
            columns[START] = partials.column(START)
            columns[END] = partials.column(END)
        columns.update(finals(partials, self.aggregations, source_schema))
        return pa.table(columns)

    def _output_key(self, keys: pa.Table) -> pa.Table:
        """State keys (key columns, ``window_start``) as output keys."""
        return keys.select(list(self._state_key)).rename_columns(list(self.key))

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        records = inputs[self.source.name].empty_table()
        if TIME not in records.column_names:
            records = records.append_column(TIME, pa.array([], pa.int64()))
        return self._row_schema(records, records.schema)

    def _row_schema(self, records: pa.Table, source_schema: pa.Schema) -> pa.Schema:
        probe = record_partials(records.slice(0, 0), self.aggregations, list(self.key_columns))
        probe = probe.append_column(START, pa.array([], pa.int64()))
        probe = probe.append_column(END, pa.array([], pa.int64()))
        return self._rows(probe, source_schema).schema

    def _windows(self, transition: Transition, records: pa.Table) -> pa.Table:
        assigned = assign(records, self.window)  # type: ignore[arg-type]
        keep = [*self.key_columns, START, END]
        partials = record_partials(assigned, self.aggregations, keep)
        batch = merge_partials(partials, self._state_key, self.aggregations, {END: "max"})
        return fold(transition, WINDOWS, self._state_key, batch, self.aggregations, {END: "max"})

    def _sessions(self, transition: Transition, records: pa.Table) -> tuple[pa.Table, pa.Table]:
        """Merge the batch's records into the sessions of their keys.

        Returns the sessions holding new records, and the keys of old sessions merged away.
        """
        gap = self.window.gap_ms  # type: ignore[union-attr]
        key = list(self.key_columns)
        times = records.column(TIME)
        singles = records.append_column(START, times).append_column(
            END, pa.array(times.to_numpy() + gap, pa.int64())
        )
        fresh = record_partials(singles, self.aggregations, [*key, START, END])
        fresh = merge_partials(fresh, self._state_key, self.aggregations, {END: "max"})
        old = fetch(transition.table(WINDOWS), key, fresh)
        if old is None:
            old = fresh.slice(0, 0)
        old = old.select(fresh.column_names)
        combined = pa.concat_tables([old, fresh])
        is_new = np.concatenate([np.zeros(old.num_rows, bool), np.ones(fresh.num_rows, bool)])
        combined = combined.append_column("__new", pa.array(is_new))
        combined = combined.sort_by([*[(k, "ascending") for k in key], (START, "ascending")])
        groups = session_groups(
            combined.select(key),
            combined.column(START).to_numpy(),
            combined.column(END).to_numpy(),
        )
        combined = combined.append_column("__session", pa.array(groups))
        extra = {START: "min", END: "max", "__new": "any", **{k: "min" for k in key}}
        merged = merge_partials(combined, ["__session"], self.aggregations, extra)
        merged = merged.filter(merged.column("__new"))
        start_of = np.zeros(int(groups.max()) + 1, dtype=np.int64)
        start_of[merged.column("__session").to_numpy()] = merged.column(START).to_numpy()
        touched = np.zeros(len(start_of), dtype=bool)
        touched[merged.column("__session").to_numpy()] = True
        was_old = ~combined.column("__new").to_numpy(zero_copy_only=False)
        in_touched = touched[groups] & was_old
        replaced = combined.filter(in_touched)
        moved = in_touched & (combined.column(START).to_numpy() != start_of[groups])
        gone = combined.filter(moved).select(list(self._state_key))
        merged = merged.select(fresh.column_names)
        transition.change(WINDOWS, self._state_key, deletes=replaced, inserts=merged)
        return merged, gone

    def _close(self, transition: Transition, horizon: int | None) -> pa.Table:
        """The windows the horizon made final, with their partials, dropped from state."""
        table = transition.table(WINDOWS)
        if horizon is None or table is None or table.num_rows == 0:
            return pa.table({})
        done = table.filter(pa.array(table.column(END).to_numpy() <= horizon))
        if done.num_rows:
            keys = done.select(list(self._state_key))
            transition.change(WINDOWS, self._state_key, deletes=keys)
        return done

    def _expire(self, transition: Transition, horizon: int | None) -> pa.Table | None:
        """Drop windows past the horizon from state; returns the keys to delete from the output."""
        table = transition.table(WINDOWS)
        if horizon is None or table is None or table.num_rows == 0:
            return None
        ends = table.column(END).to_numpy()
        if self.retention_ms is None:
            done = ends <= horizon
            if done.any():
                transition.change(WINDOWS, self._state_key, deletes=table.filter(done))
            return None
        done = ends + self.retention_ms <= horizon
        if not done.any():
            return None
        gone = table.filter(done).select(list(self._state_key))
        transition.change(WINDOWS, self._state_key, deletes=gone)
        return gone


@dataclass(frozen=True)
class FinalWindows(WindowedAggregate):
    """A ``WindowedAggregate`` whose output holds only final windows, each written once when the
    grace horizon passes its end (tumbling, hopping and sliding windows, kept forever)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sessions or self.retention_ms is not None:
            msg = "final windows are tumbling, hopping or sliding windows, without a retention"
            raise OperatorConfigError(msg)

    @property
    def final(self) -> bool:
        return True
