"""Change tables: what a batch does to an operator's output table.

A change table has the output key columns, the value columns and ``_delete``: a row with
``_delete`` false replaces the output row of its key (an upsert), a row with ``_delete`` true
removes it (its value columns are null). A batch yields at most one change per output key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from streaming.operators.batch import DELETE


def change_schema(rows: pa.Schema) -> pa.Schema:
    """The change schema for output rows of schema ``rows``."""
    return pa.schema([*rows, pa.field(DELETE, pa.bool_(), nullable=False)])


def upserts(rows: pa.Table) -> pa.Table:
    """Changes that write ``rows``."""
    flags = pa.array(np.zeros(rows.num_rows, dtype=bool))
    return pa.Table.from_arrays(
        [*rows.columns, flags], schema=change_schema(rows.schema.remove_metadata())
    )


def deletes(keys: pa.Table, rows: pa.Schema) -> pa.Table:
    """Changes that remove the rows with ``keys`` from an output of schema ``rows``."""
    columns = []
    for field in rows:
        if field.name in keys.column_names:
            columns.append(keys.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(keys.num_rows, field.type))
    flags = pa.array(np.ones(keys.num_rows, dtype=bool))
    return pa.Table.from_arrays([*columns, flags], schema=change_schema(rows.remove_metadata()))


def no_changes(rows: pa.Schema) -> pa.Table:
    """An empty change table."""
    return change_schema(rows.remove_metadata()).empty_table()


def combine(parts: Sequence[pa.Table], rows: pa.Schema) -> pa.Table:
    """One change table from parts with distinct keys."""
    present = [part for part in parts if part.num_rows]
    if not present:
        return no_changes(rows)
    schema = change_schema(rows.remove_metadata())
    return pa.concat_tables([part.cast(schema) for part in present])
