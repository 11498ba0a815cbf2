"""Folding a batch's partial aggregates into the partials kept in state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from streaming.operators.aggregations import Aggregation, merge_partials
from streaming.operators.tables import Transition
from streaming.state import key_mask


def fold(
    transition: Transition,
    name: str,
    key: Sequence[str],
    partials: pa.Table,
    aggregations: Mapping[str, Aggregation],
    extra: Mapping[str, str] | None = None,
) -> pa.Table:
    """Merge ``partials`` (one row per key) into state table ``name``; returns the merged rows."""
    table = transition.table(name)
    if table is None:
        transition.change(name, key, inserts=partials)
        return partials
    found = key_mask(table, key, partials)
    if not found.any():
        transition.change(name, key, inserts=partials)
        return partials
    existing = table.filter(found)
    stacked = pa.concat_tables([existing.select(partials.column_names), partials])
    merged = merge_partials(stacked, key, aggregations, extra)
    transition.change(name, key, deletes=existing, inserts=merged, deleted=found)
    return merged
