"""A plan over another plan's table (``group_by``): after every batch, with crashes and replays,
the groups equal a plain-Python GROUP BY over the first table on the same prefix, whose rows
move between groups, and leave them, as the changelog updates and deletes them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streaming.define import Count, Hopping, Max, Mean, Sum, Topic, Tumbling
from streaming.errors import DefineError
from streaming.operators import Batch, Step
from streaming.operators.changes import combine
from streaming.operators.event_time import empty_dead_letters

from . import reference
from .harness import InputShape, run
from .logs import PARTITIONS, cuts, grains, input_records

FIELDS = {"k": pa.string(), "q": pa.int64(), "f": pa.float64(), "note": pa.string()}
EVENTS = InputShape("events", {**FIELDS, "ts": pa.int64()}, changelog=True)
TOPIC = Topic(
    "events",
    key="k",
    value_schema="k string, q bigint, f double, note string, ts bigint",
    time="ts",
    tombstones="delete",
)

MS = timedelta(milliseconds=1)
WINDOW = 10


@st.composite
def changelogs(draw: Any) -> Any:
    parts = {"events": draw(PARTITIONS)}
    keys = ["a", "b", "c", "d", "e", "f"][: draw(st.integers(1, 6))]

    def event(d: Any, t: int) -> dict:
        return {
            "k": d(st.sampled_from(keys)),
            "q": d(st.one_of(st.none(), st.integers(-50, 50))),
            "f": d(st.one_of(st.none(), st.floats(-100, 100, allow_nan=False))),
            "note": d(st.sampled_from(["x", "y", None])),
            "ts": t,
        }

    records = input_records(
        draw, "events", parts["events"], 20, event, "ts", True, ("k",), draw(grains())
    )
    for record in records:  # a key lives in one partition, as the producer's partitioner has it
        record["k"] = f"{record['k']}{record['partition']}"
    return draw(cuts({"events": records}, parts))


def grouped(rows: list[dict], by: Any) -> dict:
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        key = by(row)
        if None not in key:
            groups.setdefault(key, []).append(row)
    kinds = {"n": ("count", None), "q_sum": ("sum", "q"), "f_mean": ("mean", "f")}
    return {key: reference.aggregate(members, kinds, None) for key, members in groups.items()}


AGGREGATIONS = {"n": Count(), "q_sum": Sum("q"), "f_mean": Mean("f")}
SHAPES = {
    "by-column": (("note",), None, lambda r: (r["note"],)),
    "by-column-and-window": (
        ("note",),
        Tumbling(WINDOW * MS),
        lambda r: (r["note"], r["ts"] // WINDOW * WINDOW),
    ),
    "by-window": ((), Tumbling(WINDOW * MS), lambda r: (r["ts"] // WINDOW * WINDOW,)),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@given(scenario=changelogs())
def test_groups_of_a_table_equal_a_group_by_of_it_on_every_prefix(
    scenario: Any, shape: str
) -> None:
    columns, window, by = SHAPES[shape]
    time = "ts" if window else None
    plan = (
        TOPIC.table().rows().group_by(*columns, window=window, time=time, aggregations=AGGREGATIONS)
    )

    def expected(prefix: Any) -> Any:
        table = reference.compaction(
            scenario.log, prefix, "events", ["k"], ["q", "f", "note", "ts"]
        )
        return grouped(list(table.values()), by), set()

    run(plan.operator, [EVENTS], scenario, expected)


class PerPartition:
    """A chained plan as the platform runs it on a cluster: the first half per input partition
    (state ``p<n>/``), what it moved split into buckets, each folded by its own state
    (``b<n>/``)."""

    def __init__(self, chained: Any, buckets: int) -> None:
        self.chained = chained
        self.buckets = buckets
        self.inputs, self.key = chained.inputs, chained.key

    def initial_state(self) -> dict:
        return {}

    def step(self, state: dict, batch: Batch) -> Step:
        new_state, delta, dead, moved = dict(state), {}, [], {}
        for p in sorted({p for ends in batch.ends.values() for p in ends}):
            records = {n: t.filter(pc.equal(t["_partition"], p)) for n, t in batch.records.items()}
            if not any(t.num_rows for t in records.values()):
                continue
            ends = {n: {p: e[p]} for n, e in batch.ends.items() if p in e}
            mine = _slice(state, f"p{p}/") or self.chained.initial_state()
            up = self.chained.upstream(mine, Batch(records, ends))
            _merge(new_state, delta, f"p{p}/", up)
            dead.append(up.dead_letters)
            for bucket, part in self.chained.buckets(up.changes, self.buckets).items():
                moved.setdefault(bucket, []).append(part)
        changes = []
        for bucket, parts in sorted(moved.items()):
            down = self.chained.downstream(_slice(state, f"b{bucket}/"), pa.concat_tables(parts))
            _merge(new_state, delta, f"b{bucket}/", down)
            changes.append(down.changes)
        schema = self.chained.output_schema({})
        return Step(
            new_state,
            combine(changes, schema),
            pa.concat_tables(dead) if dead else empty_dead_letters(),
            delta,
        )


def _slice(state: dict, prefix: str) -> dict:
    return {n[len(prefix) :]: t for n, t in state.items() if n.startswith(prefix)}


def _merge(state: dict, delta: dict, prefix: str, step: Step) -> None:
    state.update({prefix + n: t for n, t in step.state.items()})
    delta.update({prefix + n: d for n, d in step.delta.items()})


@pytest.mark.parametrize("buckets", [1, 3])
@given(scenario=changelogs())
def test_the_halves_per_partition_and_bucket_equal_the_group_by(
    scenario: Any, buckets: int
) -> None:
    plan = (
        TOPIC.table()
        .rows()
        .group_by("note", window=Tumbling(WINDOW * MS), time="ts", aggregations=AGGREGATIONS)
    )
    by = SHAPES["by-column-and-window"][2]

    def expected(prefix: Any) -> Any:
        table = reference.compaction(
            scenario.log, prefix, "events", ["k"], ["q", "f", "note", "ts"]
        )
        return grouped(list(table.values()), by), set()

    run(PerPartition(plan.operator, buckets), [EVENTS], scenario, expected)


@given(scenario=changelogs())
def test_a_chain_of_chains_regroups_the_groups(scenario: Any) -> None:
    """How many notes have each count of rows: a GROUP BY of a GROUP BY."""
    counts = TOPIC.table().rows().group_by("note", aggregations={"rows": Count()})
    plan = counts.group_by("rows", aggregations={"notes": Count()})

    def expected(prefix: Any) -> Any:
        table = reference.compaction(scenario.log, prefix, "events", ["k"], ["note"])
        per_note: dict[str, int] = {}
        for row in table.values():
            if row["note"] is not None:
                per_note[row["note"]] = per_note.get(row["note"], 0) + 1
        histogram: dict[tuple, dict] = {}
        for n in per_note.values():
            histogram.setdefault((n,), {"notes": 0})["notes"] += 1
        return histogram, set()

    run(plan.operator, [EVENTS], scenario, expected)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"aggregations": {"top": Max("q")}}, "only Count, Sum and Mean can undo"),
        (
            {"aggregations": {"n": Count()}, "window": Hopping(10 * MS, 5 * MS), "time": "ts"},
            "Tumbling",
        ),
        ({"aggregations": {"n": Count()}, "window": Tumbling(10 * MS)}, "give both"),
        ({"aggregations": {"n": Count()}, "time": "ts"}, "give both"),
        ({"aggregations": {"n": Count()}, "columns": ("nope",)}, "no columns ['nope']"),
        ({"aggregations": {"note": Count()}}, "clashes"),
    ],
)
def test_a_group_by_that_cannot_work_fails_at_definition(arguments: dict, says: str) -> None:
    columns = arguments.pop("columns", ("note",))
    with pytest.raises(DefineError, match="group_by") as raised:
        TOPIC.table().rows().group_by(*columns, **arguments)
    assert says in str(raised.value)
