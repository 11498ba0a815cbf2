"""The rows a stateful function emitted, kept so that a correction can restore them.

Per output key the operator keeps its row as final events left it (``final``: emitted by folded
records and fired timers) and as the table has it now (``current``), and whether the buffered
records emitted it in the last run (``touched``). When a key's buffer runs again, an output key
the new run emits takes that row; one the last run emitted and this one does not goes back to
its final row, or away if it has none. So the table is always "the row of the last event that
emitted the key", whichever events a correction removed or reordered.

Any later record of the key may emit an output key again and a correction may take that back,
so every final row stays: this store is as large as the part of the table the function's keys
emitted (one state partition's share of it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

from streaming.operators.key_replay import Emission, Row

ROWS = "rows"
OWNER = "_owner"
CURRENT = "_current"
FINAL = "_final"
TOUCHED = "_touched"
BOOKKEEPING = (
    (OWNER, pa.string()),
    (CURRENT, pa.string()),
    (FINAL, pa.string()),
    (TOUCHED, pa.bool_()),
)


def rows_schema(output: pa.Schema, key: tuple[str, ...]) -> pa.Schema:
    """The state table of emitted rows: the output key, then the bookkeeping columns."""
    return pa.schema([*(output.field(name) for name in key), *BOOKKEEPING])


class RowCodec:
    """Output rows as JSON text and back, exactly (decimals as strings)."""

    def __init__(self, output: pa.Schema) -> None:
        self._decimals = [f.name for f in output if pa.types.is_decimal(f.type)]

    def encode(self, row: Row | None) -> str | None:
        if row is None:
            return None
        return json.dumps(row, default=_text, separators=(",", ":"), sort_keys=True)

    def decode(self, text: str | None) -> Row | None:
        if text is None:
            return None
        row = json.loads(text)
        for name in self._decimals:
            if row.get(name) is not None:
                row[name] = Decimal(row[name])
        return row


def _text(value: Any) -> str:
    if isinstance(value, Decimal):
        return str(value)
    msg = f"an output value of type {type(value).__name__} is not a column value: {value!r}"
    raise TypeError(msg)


@dataclass
class Entry:
    """What the operator knows of one output key."""

    current: str | None = None
    final: str | None = None
    touched: bool = False


def settle(
    entries: dict[tuple[Any, ...], Entry],
    folded: Iterable[Emission],
    current: Iterable[Emission],
    codec: RowCodec,
) -> dict[tuple[Any, ...], str | None]:
    """Apply one key's run to its ``entries`` (in place); returns the output keys whose row
    changed, with their new row (None: deleted)."""
    affected = {key for key, entry in entries.items() if entry.touched}
    for emission in folded:
        entry = entries.setdefault(emission.key, Entry())
        entry.final = codec.encode(emission.row)
        affected.add(emission.key)
    latest: dict[tuple[Any, ...], Emission] = {}
    for emission in current:
        latest[emission.key] = emission
    affected |= latest.keys()
    changed: dict[tuple[Any, ...], str | None] = {}
    for key in affected:
        entry = entries.setdefault(key, Entry())
        if key in latest:
            row, entry.touched = codec.encode(latest[key].row), True
        else:
            row, entry.touched = entry.final, False
        if _differ(row, entry.current):
            changed[key] = row
        entry.current = row
    for key in [k for k, e in entries.items() if e.current is None and e.final is None]:
        del entries[key]
    return changed


def _differ(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is not b
    return json.loads(a) != json.loads(b)
