"""The stateful-function operator's state tables (``streaming.operators.keyed_process``):
``keys`` (per key its base state as JSON, its boundary and its next timer), ``buffer.<input>``
(the records at or above a key's boundary) and ``rows`` (the rows each key emitted): what a
replay of the touched keys reads from them, and how it writes them back."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from streaming.operators.batch import OFFSET, PARTITION, TIME
from streaming.operators.emitted_rows import (
    CURRENT,
    FINAL,
    OWNER,
    ROWS,
    TOUCHED,
    Entry,
    rows_schema,
)
from streaming.operators.key_replay import Event, KeyOutcome
from streaming.operators.tables import Transition
from streaming.state import State, StateDelta, key_mask

KEYS = "keys"
BASE, BOUNDARY, NEXT_TIMER = "_base", "_boundary", "_next_timer"
IDENTITY = (PARTITION, OFFSET)


@dataclass(frozen=True)
class ProcessTables:
    """The state tables of one stateful-function operator.

    Attributes:
        by: the key columns its state is kept by.
        inputs: its input names, in the order their records come at equal event times.
        key: the output table's key columns.
        output: the output rows' schema.
    """

    by: tuple[str, ...]
    inputs: tuple[str, ...]
    key: tuple[str, ...]
    output: pa.Schema

    def probe(self, transition: Transition, keys: list[tuple[Any, ...]]) -> pa.Table:
        """``keys`` as a table of the key columns, typed as the state has them."""
        schema = None
        for name in [KEYS, *(buffer_name(n) for n in self.inputs)]:
            table = transition.table(name)
            if table is not None:
                schema = pa.schema([table.schema.field(c) for c in self.by])
                break
        assert schema is not None, "a key to replay is in no state table"
        columns = {c: [k[i] for k in keys] for i, c in enumerate(self.by)}
        return pa.table(columns, schema=schema)

    def bases(
        self, transition: Transition, probe: pa.Table
    ) -> dict[tuple[Any, ...], tuple[str | None, int | None]]:
        keys = transition.table(KEYS)
        if keys is None or keys.num_rows == 0:
            return {}
        rows = keys.filter(key_mask(keys, self.by, probe)).to_pylist()
        return {tuple(r[c] for c in self.by): (r[BASE], r[BOUNDARY]) for r in rows}

    def events(self, transition: Transition, probe: pa.Table) -> dict[tuple[Any, ...], list]:
        ranks = {name: i for i, name in enumerate(self.inputs)}
        events: dict[tuple[Any, ...], list[Event]] = defaultdict(list)
        for name in self.inputs:
            buffered = transition.table(buffer_name(name))
            if buffered is None or buffered.num_rows == 0:
                continue
            for record in buffered.filter(key_mask(buffered, self.by, probe)).to_pylist():
                position = (record[TIME], 1, ranks[name], record[PARTITION], record[OFFSET])
                key = tuple(record[c] for c in self.by)
                events[key].append(Event(position, name, record))
        return events

    def entries(self, transition: Transition, owners: list[str]) -> dict[str, dict]:
        rows = transition.table(ROWS)
        entries: dict[str, dict[tuple[Any, ...], Entry]] = {}
        if rows is None or rows.num_rows == 0:
            return entries
        mine = rows.filter(pc.is_in(rows.column(OWNER), value_set=pa.array(owners)))
        for row in mine.to_pylist():
            key = tuple(row[c] for c in self.key)
            entry = Entry(row[CURRENT], row[FINAL], row[TOUCHED])
            entries.setdefault(row[OWNER], {})[key] = entry
        return entries

    def write_keys(
        self,
        transition: Transition,
        probe: pa.Table,
        touched: list[tuple[Any, ...]],
        outcomes: dict[tuple[Any, ...], KeyOutcome],
    ) -> None:
        kept = [k for k in touched if outcomes[k].base is not None or outcomes[k].kept]
        schema = pa.schema(
            [
                *(probe.schema.field(c) for c in self.by),
                (BASE, pa.string()),
                (BOUNDARY, pa.int64()),
                (NEXT_TIMER, pa.int64()),
            ]
        )
        columns: dict[str, list[Any]] = {c: [k[i] for k in kept] for i, c in enumerate(self.by)}
        columns[BASE] = [outcomes[k].base for k in kept]
        columns[BOUNDARY] = [outcomes[k].boundary for k in kept]
        columns[NEXT_TIMER] = [outcomes[k].next_timer for k in kept]
        change(transition, KEYS, self.by, deletes=probe, inserts=pa.table(columns, schema=schema))

    def write_buffers(
        self,
        transition: Transition,
        touched: list[tuple[Any, ...]],
        outcomes: dict[tuple[Any, ...], KeyOutcome],
    ) -> None:
        kept = {(e.source, e.position[3], e.position[4]) for k in touched for e in outcomes[k].kept}
        probe = self.probe(transition, touched)
        for name in self.inputs:
            buffered = transition.table(buffer_name(name))
            if buffered is None or buffered.num_rows == 0:
                continue
            mine = buffered.filter(key_mask(buffered, self.by, probe)).select(list(IDENTITY))
            done = [
                (p, o)
                for p, o in zip(*(mine.column(c).to_pylist() for c in IDENTITY), strict=True)
                if (name, p, o) not in kept
            ]
            if done:
                gone = pa.table(
                    {PARTITION: [d[0] for d in done], OFFSET: [d[1] for d in done]},
                    schema=buffered.select(list(IDENTITY)).schema,
                )
                change(transition, buffer_name(name), IDENTITY, deletes=gone)

    def write_rows(
        self,
        transition: Transition,
        owners: list[str],
        entries: dict[str, dict[tuple[Any, ...], Entry]],
    ) -> None:
        schema = rows_schema(self.output, self.key)
        records = []
        for owner in owners:
            for key, entry in entries.get(owner, {}).items():
                row = dict(zip(self.key, key, strict=True))
                row.update(
                    {
                        OWNER: owner,
                        CURRENT: entry.current,
                        FINAL: entry.final,
                        TOUCHED: entry.touched,
                    }
                )
                records.append(row)
        rows = transition.table(ROWS)
        old = None
        if rows is not None and rows.num_rows:
            mask = pc.is_in(rows.column(OWNER), value_set=pa.array(owners))
            old = rows.filter(mask).select(list(self.key))
        change(
            transition,
            ROWS,
            self.key,
            deletes=old,
            inserts=pa.Table.from_pylist(records, schema=schema),
        )


def change(
    transition: Transition,
    name: str,
    key: tuple[str, ...],
    deletes: pa.Table | None = None,
    inserts: pa.Table | None = None,
) -> None:
    """``Transition.change``, skipping deletes from a table that does not exist yet."""
    if transition.table(name) is None:
        deletes = None
        if inserts is None or inserts.num_rows == 0:
            return
    transition.change(name, key, deletes=deletes, inserts=inserts)


def settled(before: State, transition: Transition) -> tuple[State, StateDelta]:
    """The state and delta of a transition, without tables this batch created and emptied
    (their delta would only delete keys the store never saw inserted)."""
    state, delta = dict(transition.state), dict(transition.delta())
    for name, moved in list(delta.items()):
        if name not in before and (moved.inserts is None or moved.inserts.num_rows == 0):
            del delta[name]
            state.pop(name, None)
    return state, delta


def buffer_name(name: str) -> str:
    return f"buffer.{name}"
