"""A table's key as one value per row, so one index serves one-column and composite keys.

The deletion-vector sink indexes each live row under its key. A one-column key is that column
as it is. A composite key (``spend_hourly``: ``customer_id``, ``window_start``) is one string per
row: every column cast to text and prefixed with its length, e.g. ``5:c0007|13:1700002800000``.
The length prefix makes the encoding unambiguous whatever characters the parts hold, and it is
computed column-wise in Arrow, so encoding a batch's keys costs no Python per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

NULL_PART = "-1:"  # a null part: no length, so no text encodes like it


def key_type(schema: pa.Schema, columns: Sequence[str]) -> pa.DataType:
    """The type of the encoded key of a table with ``schema`` keyed by ``columns``."""
    if len(columns) == 1:
        return schema.field(columns[0]).type
    return pa.string()


def key_array(rows: pa.Table, columns: Sequence[str]) -> pa.Array:
    """One key per row of ``rows`` (see the module docstring)."""
    if len(columns) == 1:
        return pa.chunked_array(rows[columns[0]]).combine_chunks()
    parts = [_part(pa.chunked_array(rows[name]).combine_chunks()) for name in columns]
    encoded = pc.binary_join_element_wise(*parts, "|")
    return encoded.combine_chunks() if isinstance(encoded, pa.ChunkedArray) else encoded


def _part(column: pa.Array) -> pa.Array:
    text = column.cast(pa.string())
    lengths = pc.cast(pc.utf8_length(text), pa.string())
    prefixed = pc.binary_join_element_wise(lengths, text, ":")
    return pc.fill_null(prefixed, NULL_PART)
