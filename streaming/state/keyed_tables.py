"""Keyed state tables and the changes one batch makes to them.

An operator's state is a mapping from table name to a pyarrow Table. Each table names its key
columns in its schema metadata, so the store can apply and persist changes without knowing the
operator. One batch changes a table by deleting some keys and then inserting rows whose keys are
absent after the deletes; that pair is a ``TableDelta``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from streaming.state.keys import key_mask, last_per_key

KEY_METADATA = b"kappa.key"

State = Mapping[str, pa.Table]

# Appending a batch adds a chunk to each column; past this many, scans pay for the chunking more
# than one copy of the table costs.
MAX_CHUNKS = 32


def with_key(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """Return ``table`` with ``key`` recorded as its key columns in the schema metadata."""
    missing = [name for name in key if name not in table.column_names]
    if missing:
        msg = f"key columns {missing} are not in the table's columns {table.column_names}"
        raise ValueError(msg)
    metadata = dict(table.schema.metadata or {})
    metadata[KEY_METADATA] = json.dumps(list(key)).encode()
    return table.replace_schema_metadata(metadata)


def key_of(table: pa.Table) -> tuple[str, ...]:
    """The key columns recorded in ``table``'s schema metadata."""
    raw = (table.schema.metadata or {}).get(KEY_METADATA)
    if raw is None:
        msg = "a state table must name its key columns (streaming.state.with_key)"
        raise ValueError(msg)
    return tuple(json.loads(raw))


@dataclass(frozen=True)
class TableDelta:
    """What one batch did to one state table: delete ``deletes`` (key columns), then insert
    ``inserts`` (whole rows, whose keys are absent once the deletes are applied)."""

    deletes: pa.Table | None = None
    inserts: pa.Table | None = None

    @property
    def empty(self) -> bool:
        return (self.deletes is None or self.deletes.num_rows == 0) and (
            self.inserts is None or self.inserts.num_rows == 0
        )


StateDelta = Mapping[str, TableDelta]


def apply_delta(
    table: pa.Table | None, delta: TableDelta, deleted: np.ndarray | None = None
) -> pa.Table | None:
    """The table after ``delta``; ``table`` may be None (the table does not exist yet).

    ``deleted``, when the caller already knows it, is the mask of the rows whose key is in
    ``delta.deletes`` (it saves finding them again).
    """
    if table is None:
        return delta.inserts
    if delta.deletes is not None and delta.deletes.num_rows:
        if deleted is None:
            deleted = key_mask(table, key_of(table), delta.deletes)
        table = table.filter(~deleted)
    if delta.inserts is not None and delta.inserts.num_rows:
        inserts = delta.inserts
        if inserts.schema != table.schema:
            inserts = inserts.cast(table.schema)
        table = pa.concat_tables([table, inserts])
        if table.num_columns and table.column(0).num_chunks > MAX_CHUNKS:
            table = table.combine_chunks()
    return table


def apply_state_delta(state: State, delta: StateDelta) -> dict[str, pa.Table]:
    """The state after ``delta``: each named table with its own delta applied."""
    result = dict(state)
    for name, change in delta.items():
        if change.empty:
            continue
        table = apply_delta(result.get(name), change)
        if table is not None:
            result[name] = table
    return result


def is_empty_delta(delta: StateDelta) -> bool:
    """Whether ``delta`` changes nothing."""
    return all(change.empty for change in delta.values())


def collapse(deltas: list[TableDelta], key: tuple[str, ...]) -> TableDelta:
    """One delta with the effect of ``deltas`` applied in order."""
    events = []
    inserts = []
    row_base = 0
    for step, change in enumerate(deltas):
        if change.deletes is not None and change.deletes.num_rows:
            keys = change.deletes.select(list(key))
            events.append(_events(keys, 2 * step, pa.nulls(keys.num_rows, pa.int64())))
        if change.inserts is not None and change.inserts.num_rows:
            n = change.inserts.num_rows
            rows = pa.array(np.arange(row_base, row_base + n, dtype=np.int64))
            events.append(_events(change.inserts.select(list(key)), 2 * step + 1, rows))
            inserts.append(change.inserts)
            row_base += n
    if not events:
        return TableDelta()
    all_events = pa.concat_tables(events, promote_options="permissive")
    last = all_events.take(last_per_key(all_events, key, ["__seq"]))
    rows = last.column("__row").drop_null()
    final_inserts = None
    if inserts and len(rows):
        schema = inserts[0].schema
        stacked = pa.concat_tables([t.cast(schema) for t in inserts])
        final_inserts = with_key(stacked.take(rows), key)
    return TableDelta(deletes=all_events.select(list(key)), inserts=final_inserts)


def _events(keys: pa.Table, seq: int, rows: pa.Array) -> pa.Table:
    seqs = pa.array(np.full(keys.num_rows, seq, dtype=np.int64))
    return keys.append_column("__seq", seqs).append_column("__row", rows)
