"""Folding a batch's partial aggregates into the partials kept in state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from streaming.operators.aggregations import Aggregation, merge_partials
from streaming.operators.tables import Transition, fetch


def fold(
    transition: Transition,
    name: str,
    key: Sequence[str],
    partials: pa.Table,
    aggregations: Mapping[str, Aggregation],
    extra: Mapping[str, str] | None = None,
) -> pa.Table:
    """Merge ``partials`` (one row per key) into state table ``name``; returns the merged rows."""
    existing = fetch(transition.table(name), key, partials)
    if existing is None or existing.num_rows == 0:
        merged = partials
    else:
        stacked = pa.concat_tables([existing.select(partials.column_names), partials])
        merged = merge_partials(stacked, key, aggregations, extra)
    transition.change(name, key, deletes=existing, inserts=merged)
    return merged
