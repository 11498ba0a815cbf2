"""Short ways to write batches by hand in deterministic tests."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from streaming.operators import Batch

META = {"_partition": pa.int32(), "_offset": pa.int64(), "_timestamp": pa.int64()}


def records(
    fields: dict[str, pa.DataType], rows: list[dict[str, Any]], changelog: bool = False
) -> pa.Table:
    """Rows as dicts with ``p``, ``o``, optional ``stamp`` (record timestamp, default the ``ts``
    value or 0), optional ``delete``, and the value columns."""
    schema = dict(META)
    if changelog:
        schema["_delete"] = pa.bool_()
    schema.update(fields)
    columns: dict[str, list] = {name: [] for name in schema}
    for row in rows:
        columns["_partition"].append(row["p"])
        columns["_offset"].append(row["o"])
        columns["_timestamp"].append(row.get("stamp", row.get("ts", 0)))
        if changelog:
            columns["_delete"].append(bool(row.get("delete", False)))
        for name in fields:
            columns[name].append(row.get(name))
    return pa.table({name: pa.array(values, schema[name]) for name, values in columns.items()})


class Feed:
    """Feeds batches to an operator, tracks end offsets and applies changes to a dict."""

    def __init__(self, operator: Any, partitions: dict[str, list[int]]) -> None:
        self.operator = operator
        self.state = operator.initial_state()
        self.ends = {name: dict.fromkeys(parts, 0) for name, parts in partitions.items()}
        self.table: dict[tuple, dict] = {}
        self.late: list[tuple] = []
        self.last = None

    def send(self, **tables: pa.Table) -> pa.Table:
        for name, table in tables.items():
            for p, o in zip(
                table.column("_partition").to_pylist(),
                table.column("_offset").to_pylist(),
                strict=True,
            ):
                self.ends[name][p] = max(self.ends[name][p], o + 1)
        step = self.operator.step(
            self.state, Batch(tables, {n: dict(e) for n, e in self.ends.items()})
        )
        self.state = step.state
        self.last = step
        for row in step.changes.to_pylist():
            key = tuple(row[c] for c in self.operator.key)
            if row["_delete"]:
                self.table.pop(key, None)
            else:
                self.table[key] = {c: v for c, v in row.items() if c != "_delete"}
        self.late += [
            (r["input"], r["partition"], r["offset"]) for r in step.dead_letters.to_pylist()
        ]
        return step.changes

    def rows(self) -> int:
        return sum(t.num_rows for n, t in self.state.items() if n != "clock")
