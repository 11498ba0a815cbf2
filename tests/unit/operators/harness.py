"""Runs an operator over a log cut into batches and checks every batch against the reference.

After each batch the output table (the changes applied to a dict) must equal the reference on
that batch's prefix, and the dead letters so far must be exactly the reference's late records.
At chosen batches the test crashes (drops the in-memory state and loads it from the state store
as of the last batch) or applies the same batch twice (which must change nothing).
"""

from __future__ import annotations

import math
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from streaming.operators import Batch
from streaming.state import StateStore, is_empty_delta

from .reference import Log, Prefix

Reference = Callable[[Prefix], tuple[dict, set]]


@dataclass(frozen=True)
class InputShape:
    """How to turn an input's record dicts into an Arrow batch."""

    name: str
    fields: dict[str, pa.DataType]
    changelog: bool = False


@dataclass
class Scenario:
    log: Log
    partitions: dict[str, list[int]]
    cuts: list[Prefix]
    crashes: set[int] = field(default_factory=set)
    replays: set[int] = field(default_factory=set)
    seed: int = 0


def batch_table(shape: InputShape, records: list[dict], rng: random.Random) -> pa.Table:
    records = list(records)
    rng.shuffle(records)
    columns: dict[str, pa.Array] = {
        "_partition": pa.array([r["partition"] for r in records], pa.int32()),
        "_offset": pa.array([r["offset"] for r in records], pa.int64()),
        "_timestamp": pa.array([r["timestamp"] for r in records], pa.int64()),
    }
    if shape.changelog:
        columns["_delete"] = pa.array([bool(r.get("delete")) for r in records], pa.bool_())
    for name, dtype in shape.fields.items():
        columns[name] = pa.array([r.get(name) for r in records], dtype)
    return pa.table(columns)


def make_batch(
    shapes: list[InputShape], scenario: Scenario, start: Prefix, end: Prefix, rng: random.Random
) -> Batch:
    records = {}
    for shape in shapes:
        lo, hi = start.get(shape.name, {}), end[shape.name]
        chosen = [
            r
            for r in scenario.log[shape.name]
            if lo.get(r["partition"], 0) <= r["offset"] < hi[r["partition"]]
        ]
        records[shape.name] = batch_table(shape, chosen, rng)
    return Batch(records, {name: dict(ends) for name, ends in end.items()})


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is None and b is None
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def same_table(actual: dict, expected: dict) -> bool:
    if set(actual) != set(expected):
        return False
    for key, row in expected.items():
        got = actual[key]
        if set(got) != set(row) or not all(same(got[c], row[c]) for c in row):
            return False
    return True


def apply_changes(table: dict, changes: pa.Table, key: tuple[str, ...]) -> None:
    rows = changes.to_pylist()
    keys = [tuple(row[c] for c in key) for row in rows]
    assert len(set(keys)) == len(keys), f"two changes for one key in a batch: {keys}"
    for k, row in zip(keys, rows, strict=True):
        if row["_delete"]:
            table.pop(k, None)
        else:
            table[k] = {c: v for c, v in row.items() if c != "_delete" and c not in key}


def strip(expected: dict, key: tuple[str, ...]) -> dict:
    return {k: {c: v for c, v in row.items() if c not in key} for k, row in expected.items()}


def run(operator: Any, shapes: list[InputShape], scenario: Scenario, reference: Reference) -> None:
    """Apply every batch and compare with ``reference`` after each (see the module docstring)."""
    rng = random.Random(scenario.seed)
    table: dict = {}
    dead: set = set()
    with tempfile.TemporaryDirectory() as directory:
        store = StateStore(directory, min_snapshot_bytes=4096)
        state = operator.initial_state()
        store.load(None)
        start: Prefix = {}
        for batch_id, end in enumerate(scenario.cuts):
            batch = make_batch(shapes, scenario, start, end, rng)
            step = operator.step(state, batch)
            apply_changes(table, step.changes, operator.key)
            letters = step.dead_letters.to_pylist()
            assert all(row["reason"] == "late" for row in letters)
            news = {(r["input"], r["partition"], r["offset"]) for r in letters}
            assert not news & dead, "a record was dead-lettered twice"
            dead |= news
            store.write(batch_id, step.delta, step.state)
            state = step.state
            if batch_id in scenario.replays:
                again = operator.step(state, batch)
                assert again.changes.num_rows == 0, again.changes.to_pylist()
                assert again.dead_letters.num_rows == 0
                assert is_empty_delta(again.delta)
            if batch_id in scenario.crashes:
                store = StateStore(directory, min_snapshot_bytes=4096)
                restored = store.load(batch_id)
                assert _same_state(restored, state)
                state = restored
            expected, late = reference(end)
            assert same_table(table, strip(expected, operator.key)), _diff(
                table, strip(expected, operator.key), batch_id
            )
            assert dead == late, (batch_id, sorted(dead ^ late))
            start = end


def _same_state(a: dict[str, pa.Table], b: dict[str, pa.Table]) -> bool:
    if set(a) != set(b):
        return False
    for name in a:
        x, y = a[name], b[name]
        if x.num_rows != y.num_rows:
            return False
        key = sorted(map(str, x.to_pylist()))
        if key != sorted(map(str, y.to_pylist())):
            return False
    return True


def _diff(actual: dict, expected: dict, batch_id: int) -> str:
    lines = [f"after batch {batch_id}:"]
    for key in sorted(set(actual) | set(expected), key=repr):
        a, e = actual.get(key), expected.get(key)
        if a is None or e is None or not all(same(a.get(c), e.get(c)) for c in e):
            lines.append(f"  {key}: got {a} expected {e}")
    return "\n".join(lines)
