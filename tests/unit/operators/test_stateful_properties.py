"""Property tests: a stateful function the user writes equals its plain-Python definition after
every batch, across crash-restarts (state reloaded from the store) and replayed batches.

The plan is built with the authoring API (``streaming.define``) and run by the harness on random
logs: several partitions, out-of-order and late records, uneven batch cuts.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from streaming.define import Delete, ListOf, MapOf, Topic, Value
from streaming.define import stateful as declare

from . import stateful_reference as ref
from .harness import InputShape, run
from .logs import GRACE, PARTITIONS, cuts, grains, input_records

GRACE_PERIOD = timedelta(milliseconds=GRACE)
FIELDS = {"id": pa.string(), "k": pa.string(), "r": pa.string(), "v": pa.int64(), "ts": pa.int64()}
A = Topic(
    "a", key="k", value_schema="id string, k string, r string, v bigint, ts bigint", time="ts"
)
B = Topic(
    "b", key="k", value_schema="id string, k string, r string, v bigint, ts bigint", time="ts"
)
SHAPES = {
    "a": InputShape("a", FIELDS),
    "b": InputShape("b", FIELDS),
}


def _values(keys: int) -> Any:
    def make(d: Any, t: int) -> dict:
        return {
            "id": f"i{d(st.integers(0, 10**6))}",
            "k": d(st.sampled_from([f"k{i}" for i in range(keys)])),
            "r": d(st.sampled_from(["eu", "us", "au"])),
            "v": d(st.integers(1, 12)),
            "ts": t,
        }

    return make


@st.composite
def logs(draw: Any, names: tuple[str, ...]) -> Any:
    parts = {name: draw(PARTITIONS) for name in names}
    keys = draw(st.integers(1, 3))
    grain = draw(grains())
    log = {}
    values = _values(keys)
    for name in names:
        log[name] = input_records(draw, name, parts[name], 14, values, "ts", grain=grain)
    for name in names:  # record ids unique, so rows per record have keys of their own
        for i, record in enumerate(log[name]):
            if "id" in record:
                record["id"] = f"{name}{i}"
    return draw(cuts(log, parts))


# A function using every kind of state, timers and deletes, over two inputs.


def _mixed(record: dict, state: Any) -> Any:
    assert not [c for c in record if c.startswith("_")]  # a user function sees user columns
    now, ident = state.time, record["id"]
    if state.input == "a":
        state.total.set(state.total.get() + record["v"])
        state.seen[ident] = record["v"]
        state.recent.append(record["v"])
        if record["v"] % 3 == 0:
            state.timers.register(now + 7)
        if record["v"] % 4 == 0:
            state.timers.delete(now + 3)
            state.timers.register(now - 2)
    else:
        state.total.set(record["v"])
        if record["v"] % 2 == 0:
            state.recent.clear()
    info = f"{len(state.seen)}:{sum(state.recent)}"
    yield {"out": f"rec-{ident}", "k": state.key["k"], "n": state.total.get(), "info": info}
    if record["v"] % 5 == 0:
        yield Delete(out=f"sum-{state.key['k']}")
    else:
        summary = {"out": f"sum-{state.key['k']}", "k": state.key["k"], "n": state.total.get()}
        yield {**summary, "info": state.input}


def _mixed_timer(at: int, state: Any) -> dict:
    row = {"out": f"tim-{state.key['k']}-{at}", "k": state.key["k"], "n": state.total.get()}
    row["info"] = str(len(state.recent))
    if at % 2:
        state.recent.clear()
    return row


MIXED = declare(
    by="k",
    key="out",
    emits="out string, k string, n bigint, info string",
    state={
        "total": Value(int, default=0),
        "seen": MapOf(str, int, ttl=timedelta(milliseconds=ref.TTL_SEEN)),
        "recent": ListOf(int, ttl=timedelta(milliseconds=ref.TTL_RECENT)),
    },
    timer=_mixed_timer,
)(_mixed)


def _ids(log: Any) -> Any:
    """The reference keys rows per record as input-partition-offset; the test's function uses
    the record's id column, so translate."""
    return {
        f"{name}-{r['partition']}-{r['offset']}": r["id"] for name, rs in log.items() for r in rs
    }


@given(scenario=logs(("a", "b")))
def test_a_stateful_function_equals_its_definition_on_every_prefix(scenario: Any) -> None:
    plan = A.stream().process(MIXED, B.stream(), grace=GRACE_PERIOD)
    ids = _ids(scenario.log)

    def expected(prefix: Any) -> Any:
        table, late = ref.mixed_function(scenario.log, prefix, GRACE)
        renamed = {}
        for (out,), row in table.items():
            if out.startswith("rec-"):
                out = f"rec-{ids[out[4:]]}"
            renamed[(out,)] = {"out": out, **row}
        return renamed, late

    object.__setattr__(plan.operator, "prune_every_ms", 7)
    run(plan.operator, [SHAPES["a"], SHAPES["b"]], scenario, expected)
