"""Stateful functions: a bad declaration is refused when it is declared, saying what to fix; a
function that fails, emits what it did not declare or keeps a wrong value fails its batch naming
the key and the record; a record without a key is dead-lettered with its reason."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest

from streaming.define import ListOf, MapOf, Topic, Value, stateful
from streaming.errors import DefineError
from streaming.operators import Batch, BatchError

ORDERS = Topic(
    "orders", key="k", value_schema="id string, k string, v bigint, ts bigint", time="ts"
)


def _keep(record: dict[str, Any], state: Any) -> dict[str, Any]:
    return {"id": record["id"], "n": record["v"]}


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ({"key": "missing"}, r"its key columns \['missing'\] are not among emits"),
        ({"emits": "id strang"}, "strang"),
        ({"state": {"key": Value(int)}}, "use an identifier not starting with '_' and not one"),
        ({"state": {"seen": Value(bytes)}}, "type <class 'bytes'> is not one of"),
        ({"state": {"seen": MapOf(float, int)}}, "map keys must be str or int"),
        ({"state": {"seen": ListOf(int, ttl=timedelta(0))}}, "ttl must be a positive timedelta"),
        ({"state": {"seen": int}}, r"declare Value\(type\), MapOf\(key_type, type\) or ListOf"),
        ({"state": {"seen": Value(int, default="0")}}, "default: expected int, got str"),
        ({"by": ()}, "by: give a column name or a tuple of them"),
    ],
)
def test_a_bad_declaration_is_refused_when_declared(
    declaration: dict[str, Any], message: str
) -> None:
    arguments: dict[str, Any] = {"by": "k", "key": "id", "emits": "id string, n bigint"}
    with pytest.raises(DefineError, match=message):
        stateful(**{**arguments, **declaration})(_keep)


def test_a_plan_refuses_a_plain_function_an_input_not_a_stream_or_a_missing_column() -> None:
    with pytest.raises(DefineError, match=r"declare it with @stateful\(by=..., key=..."):
        ORDERS.stream().process(_keep)  # type: ignore[arg-type]
    by_customer = stateful(by="customer", key="id", emits="id string, n bigint")(_keep)
    with pytest.raises(DefineError, match=r"topic 'orders' has no columns \['customer'\]"):
        ORDERS.stream().process(by_customer)
    keep = stateful(by="k", key="id", emits="id string, n bigint")(_keep)
    with pytest.raises(DefineError, match=r"further inputs are streams \(topic.stream\(\)\)"):
        ORDERS.stream().process(keep, ORDERS)  # type: ignore[arg-type]


def _batch(rows: list[dict[str, Any]]) -> Batch:
    columns: dict[str, pa.Array] = {
        "_partition": pa.array([0] * len(rows), pa.int32()),
        "_offset": pa.array(range(len(rows)), pa.int64()),
        "_timestamp": pa.array([r["ts"] for r in rows], pa.int64()),
        "id": pa.array([r["id"] for r in rows], pa.string()),
        "k": pa.array([r["k"] for r in rows], pa.string()),
        "v": pa.array([r["v"] for r in rows], pa.int64()),
        "ts": pa.array([r["ts"] for r in rows], pa.int64()),
    }
    return Batch({"orders": pa.table(columns)}, {"orders": {0: len(rows)}})


ROWS = [{"id": "a", "k": "k1", "v": 1, "ts": 100}, {"id": "b", "k": "k1", "v": 0, "ts": 200}]


def _run(function: Any, rows: list[dict[str, Any]] = ROWS) -> Any:
    operator = ORDERS.stream().process(function).operator
    return operator.step(operator.initial_state(), _batch(rows))


def test_a_failing_function_names_its_key_and_record() -> None:
    @stateful(by="k", key="id", emits="id string, n bigint")
    def divide(record: dict[str, Any], state: Any) -> dict[str, Any]:
        return {"id": record["id"], "n": 10 // record["v"]}

    with pytest.raises(BatchError, match=r"raised ZeroDivisionError.*\{'k': 'k1'\}.*offset 1"):
        _run(divide)


def test_emitting_an_undeclared_column_or_keeping_a_wrong_value_fails_the_batch() -> None:
    @stateful(by="k", key="id", emits="id string, n bigint")
    def extra(record: dict[str, Any], state: Any) -> dict[str, Any]:
        return {"id": record["id"], "n": 1, "note": "x"}

    with pytest.raises(BatchError, match=r"emitted columns \['note'\] its output does not"):
        _run(extra)

    @stateful(by="k", key="id", emits="id string, n bigint", state={"total": Value(int)})
    def wrong(record: dict[str, Any], state: Any) -> None:
        state.total.set(str(record["v"]))

    with pytest.raises(BatchError, match="state 'total': expected int, got str"):
        _run(wrong)


def test_a_record_without_a_key_is_dead_lettered_with_its_reason() -> None:
    step = _run(
        stateful(by="k", key="id", emits="id string, n bigint")(_keep),
        [
            ROWS[0],
            {**ROWS[1], "k": None},
        ],
    )
    assert step.changes.column("id").to_pylist() == ["a"]
    [letter] = step.dead_letters.to_pylist()
    assert (letter["offset"], letter["reason"]) == (1, "null key")


PROFILES = Topic(
    "profiles",
    key="k",
    value_schema="k string, name string, at bigint",
    time="at",
    tombstones="delete",
)


def test_a_changelog_input_is_read_as_its_changes_a_tombstone_at_its_record_timestamp() -> None:
    @stateful(by="k", key="id", emits="id string, name string", state={"name": Value(str)})
    def named(record: dict[str, Any], state: Any) -> dict[str, Any] | None:
        if state.input == "profiles":
            if state.tombstone:
                assert record == {"k": "k1", "name": None, "at": None}
                state.name.clear()
            else:
                state.name.set(record["name"])
            return None
        return {"id": record["id"], "name": state.name.get()}

    operator = PROFILES.stream().process(named, ORDERS.stream()).operator
    profiles = {
        "_partition": pa.array([0, 0], pa.int32()),
        "_offset": pa.array([0, 1], pa.int64()),
        "_timestamp": pa.array([50, 150], pa.int64()),
        "_delete": pa.array([False, True]),
        "k": pa.array(["k1", "k1"]),
        "name": pa.array(["ada", None]),
        "at": pa.array([50, None], pa.int64()),
    }
    orders = _batch(ROWS)
    batch = Batch(
        {"profiles": pa.table(profiles), **orders.records},
        {"profiles": {0: 2}, **orders.ends},
    )
    step = operator.step(operator.initial_state(), batch)
    rows = {r["id"]: r["name"] for r in step.changes.select(["id", "name"]).to_pylist()}
    assert rows == {"a": "ada", "b": None}
