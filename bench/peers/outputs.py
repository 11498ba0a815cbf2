"""Each engine's output read back as a table and compared with the reference.

The platform's output is its Delta table. The peers write records to an output topic, keyed by
the table's key, with the platform table's column names in a JSON value; the topic read back
is a table the way a compacted topic is one: per key the last record, a tombstone deletes. A
click-search join in Kafka Streams, Quix Streams and Spark emits one record per matching search
(and Quix one without a match first): per click, the record with the latest search wins, which
is what the platform's ``join_latest_within`` keeps. Quix writes a deletion as the JSON value
``null`` (its JSON serializer's None), read as a tombstone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench.peers.reference import cents
from bench.peers.workloads import CLOSING_PREFIX
from bench.support.reference import replay

Row = dict[str, Any]


def _latest(row: Row) -> tuple[Any, tuple]:
    return row["customer_id"], (row["name"], row["email"], row["country"], int(row["updated_at"]))


def _fraud(row: Row) -> tuple[Any, tuple]:
    return row["txn_id"], (
        row["customer_id"],
        cents(row["amount"]),
        row["country"],
        row["customer_country"],
        row["customer_name"],
        bool(row["suspicious"]),
    )


def _spend(row: Row) -> tuple[Any, tuple]:
    key = (row["customer_id"], int(row["window_start"]))
    return key, (int(row["txn_count"]), cents(row["total_amount"]), cents(row["max_amount"]))


def _clicks(row: Row) -> tuple[Any, tuple]:
    return row["click_id"], (row["user_id"], row["search_query"])


COMPARED: dict[str, Callable[[Row], tuple[Any, tuple]]] = {
    "latest": _latest,
    "fraud": _fraud,
    "spend": _spend,
    "clicks": _clicks,
}


def table_of_rows(workload: str, rows: list[Row]) -> dict[Any, tuple]:
    """A table's rows (the platform's Delta table) as the compared values by key."""
    convert = COMPARED[workload]
    table = dict(convert(row) for row in rows)
    return {k: v for k, v in table.items() if not closing_key(k)}


def read_delta(workload: str, path: Path) -> dict[Any, tuple]:
    from streaming.delta.table_reader import read_arrow

    return table_of_rows(workload, read_arrow(path).to_pylist())


def read_topic(workload: str, bootstrap: str, topic: str) -> dict[Any, tuple]:
    """The output topic, committed records only, read back as a table (module docstring)."""
    convert = COMPARED[workload]
    best: dict[str, tuple[float, tuple | None]] = {}
    for key, value in _records(bootstrap, topic):
        row = None if value is None else json.loads(value, parse_float=Decimal)
        if row is None:  # a tombstone, or Quix's JSON null for a deletion
            best.pop(key, None)
            continue
        rank = 0.0
        if workload == "clicks":  # the latest search wins, a click without one loses to any
            rank = -1.0 if row.get("search_ts") is None else float(row["search_ts"])
            if key in best and best[key][0] > rank:
                continue
        best[key] = (rank, convert(row))
    table = dict(converted for _, converted in best.values() if converted is not None)
    return {k: v for k, v in table.items() if not closing_key(k)}


def _records(bootstrap: str, topic: str) -> list[tuple[str, bytes | None]]:
    """The topic's committed records (the reference replay reads ``read_committed``, librdkafka's
    default), as key and value."""
    return [(record.key.decode(), record.value) for record in replay(bootstrap, topic)]


def closing_key(key: Any) -> bool:
    """Whether an output key is a closing record's (``workloads.ClickSearch.closing``)."""
    first = key[0] if isinstance(key, tuple) else key
    return isinstance(first, str) and first.startswith(CLOSING_PREFIX)


@dataclass
class Verdict:
    """How a table compares with the reference."""

    same: bool
    rows: int
    expected: int
    missing: int = 0
    extra: int = 0
    differ: int = 0
    examples: list[str] = field(default_factory=list)

    def line(self) -> str:
        if self.same:
            return f"SAME ({self.rows:,} rows)"
        return (
            f"DIFFERENT ({self.rows:,} rows, {self.expected:,} expected: {self.missing:,} "
            f"missing, {self.extra:,} extra, {self.differ:,} differ)"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare(got: dict[Any, tuple], expected: dict[Any, tuple], examples: int = 3) -> Verdict:
    missing = [k for k in expected if k not in got]
    extra = [k for k in got if k not in expected]
    differ = [k for k in expected if k in got and got[k] != expected[k]]
    shown = [f"{k}: got {got[k]}, expected {expected[k]}" for k in differ[:examples]]
    shown += [f"{k}: missing, expected {expected[k]}" for k in missing[: max(0, examples - 1)]]
    shown += [f"{k}: not expected, got {got[k]}" for k in extra[:1]]
    return Verdict(
        same=not (missing or extra or differ),
        rows=len(got),
        expected=len(expected),
        missing=len(missing),
        extra=len(extra),
        differ=len(differ),
        examples=shown,
    )
