"""A batch's new rows as the records of a pipeline's stream output
(``streaming.define.stream_output``): per row, its topic (by the routing column's value), its
key (the key column as text) and the columns its topic declares as JSON, encoded as the
changelog's rows are (``streaming.run.changelog_records.encoded_rows``)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from streaming.define.stream_output import StreamOutput
from streaming.operators import DELETE
from streaming.run.changelog_records import RoutedRecord, encoded_rows


def stream_records(changes: pa.Table, output: StreamOutput) -> Iterator[RoutedRecord]:
    """(record key, value, topic) of each new row of ``changes`` that has a key and a topic;
    the rows of one topic in the batch's order, topic after topic."""
    rows = changes.filter(pc.invert(changes.column(DELETE))).drop_columns([DELETE])
    rows = rows.filter(rows.column(output.key).is_valid())
    columns = dict(output.columns)
    for value, topic in output.routes:
        routed = rows if output.by is None else rows.filter(_routed_to(rows, output.by, value))
        if routed.num_rows == 0:
            continue
        # The record key is the key column's, which the value may leave out.
        keys = pc.cast(routed.column(output.key), pa.string()).to_pylist()
        value = routed.select(list(columns[topic]))
        values = encoded_rows(value, (value.column_names[0],))
        for key, (_, record) in zip(keys, values, strict=True):
            yield key, record, topic


def _routed_to(rows: pa.Table, column: str, value: str | None) -> pa.ChunkedArray:
    """Which rows ``column``'s value, as text, sends to the route of ``value``."""
    text = pc.cast(rows.column(column), pa.string())
    return pc.fill_null(pc.equal(text, value), False)
