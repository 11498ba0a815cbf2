"""A new version's change is sorted by how much of the table's history it reaches: inputs,
state, output or none, the most severe first, and only an output (or no) change that keeps the
table's columns may start forward-only."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipelines import clicks_per_zip, customers, fraud_alerts, spend_hourly
from pipelines.topics import TRANSACTIONS
from streaming.define import (
    Count,
    KeyState,
    LatestPerKey,
    MapOf,
    Pipeline,
    Topic,
    Tumbling,
    Value,
    stateful,
)
from streaming.versions.change import categorise
from streaming.versions.plan_diff import Category

ALERT = "txn_id string, customer_id string, amount decimal(18,2)"
DECIMAL = pa.decimal128(18, 2)
HUNDRED = pa.scalar(Decimal(100), DECIMAL)


def _with(pipeline: Pipeline, **changes: Any) -> Pipeline:
    return dataclasses.replace(pipeline, version="v2", **changes)


def _change(old: Pipeline, new: Pipeline):  # type: ignore[no-untyped-def]
    return categorise(old, new, old.version, new.version)


def _reasons(change) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(change.reasons)


def test_a_threshold_added_to_the_filter_is_an_output_change_that_may_go_forward_only() -> None:
    old = fraud_alerts.PIPELINE
    plan = old.plan.where(pc.field("amount") >= HUNDRED)
    change = _change(old, _with(old, plan=plan))
    assert change.category == Category.OUTPUT
    assert change.forward_only_allowed and change.refusal == ""
    assert "output: the filter suspicious -> (suspicious and (amount >= 100.00))" in change.reasons


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda p: p.with_columns(big=pc.field("amount") > HUNDRED), "adds column big"),
        (lambda p: p.select("amount"), "the selected columns"),
    ],
)
def test_columns_and_selection_are_output_changes_refused_forward_only_when_columns_change(
    edit, expected
) -> None:  # type: ignore[no-untyped-def]
    old = fraud_alerts.PIPELINE
    change = _change(old, _with(old, plan=edit(old.plan)))
    assert change.category == Category.OUTPUT
    assert expected in _reasons(change)
    assert not change.forward_only_allowed
    assert "changes the table's columns" in change.refusal


def test_another_filter_and_another_output_topic_are_output_changes() -> None:
    old = spend_hourly.PIPELINE
    plan = old.plan.where(pc.field("txn_count") >= 1)
    new = _with(old, plan=plan, publish=Topic("spend_hourly_out"))
    change = _change(old, new)
    assert change.category == Category.OUTPUT
    assert "output: the output topic None -> spend_hourly_out" in change.reasons
    assert change.forward_only_allowed


def test_another_window_is_a_state_change_named_in_the_refusal() -> None:
    old = spend_hourly.PIPELINE
    new = _with(old, plan=spend_hourly.spend_per_window(timedelta(minutes=30)))
    change = _change(old, new)
    assert change.category == Category.STATE
    assert not change.forward_only_allowed
    assert "WindowedAggregate: window" in change.refusal
    assert "changes its state" in change.refusal


def test_topic_declarations_and_grace_are_input_changes_and_come_first() -> None:
    old = spend_hourly.PIPELINE
    topic = dataclasses.replace(
        TRANSACTIONS, value_schema=TRANSACTIONS.value_schema + ", note string"
    )
    plan = old.plan.with_columns(flag=pc.field("txn_count") > 1)
    moved = dataclasses.replace(plan, inputs=(topic,))
    change = _change(old, _with(old, plan=moved))
    assert change.category == Category.INPUTS
    assert [d.category for d in change.differences] == sorted(
        (d.category for d in change.differences), key=lambda c: c.severity
    )
    assert change.reasons[0].startswith("inputs: topic transactions: value schema")
    assert any(r.startswith("output: adds column flag") for r in change.reasons)

    plan = spend_hourly.PIPELINE.plan
    operator = dataclasses.replace(plan.operator, grace_ms=60_000)
    graced = _change(old, _with(old, plan=dataclasses.replace(plan, operator=operator)))
    assert graced.reasons == ("inputs: grace 0:10:00 -> 0:01:00",)


def test_the_regrouped_plans_own_filter_is_a_state_change() -> None:
    old = clicks_per_zip.PIPELINE
    first = old.plan.operator.first.where(pc.field("age") > 18)
    plan = first.group_by(
        "zip_code", window=Tumbling(timedelta(hours=1)), time="ts", aggregations={"clicks": Count()}
    )
    change = _change(old, _with(old, plan=plan))
    assert change.category == Category.STATE
    assert "state: the plan it regroups: the filter" in _reasons(change)


def _history(min_history: int, state: dict[str, Any], double: bool = False):  # type: ignore[no-untyped-def]
    @stateful(by="customer_id", key="txn_id", emits=ALERT, state=state)
    def check(txn: dict[str, Any], state: KeyState) -> Iterator[dict[str, Any]]:
        seen = state.regions.get(txn["country"], 0)
        if seen >= min_history:
            yield {c: txn[c] for c in ("txn_id", "customer_id", "amount")}
        state.regions[txn["country"]] = seen + (2 if double else 1)

    return check


def _history_pipeline(function) -> Pipeline:  # type: ignore[no-untyped-def]
    plan = TRANSACTIONS.stream().process(function)
    return Pipeline(name="history", version="v1", plan=plan)


REGIONS = {"regions": MapOf(str, int)}


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (_history(3, {**REGIONS, "n": Value(int, default=0)}), "declared state"),
        (_history(5, REGIONS), "its code (or what it calls or reads) changed"),
        (_history(3, REGIONS, double=True), "its code (or what it calls or reads) changed"),
    ],
    ids=["declared state", "a value it closes over", "its code"],
)
def test_a_stateful_functions_state_and_code_are_state_changes(new, expected) -> None:  # type: ignore[no-untyped-def]
    old = _history_pipeline(_history(3, REGIONS))
    change = _change(old, _with(_history_pipeline(new)))
    assert change.category == Category.STATE
    assert expected in change.refusal
    assert not change.forward_only_allowed


def test_the_same_function_declared_again_is_no_change() -> None:
    old = _history_pipeline(_history(3, REGIONS))
    change = _change(old, _with(_history_pipeline(_history(3, REGIONS))))
    assert change.category == Category.NONE
    assert change.differences == ()
    assert change.forward_only_allowed


def test_description_and_quality_rules_change_no_row() -> None:
    old = customers.PIPELINE
    new = _with(old, description="another description", quality=())
    change = _change(old, new)
    assert change.category == Category.NONE
    assert change.forward_only_allowed
    assert any("quality rules" in r for r in change.reasons)


def test_settings_count_as_state_the_platform_cannot_tell_what_they_shape() -> None:
    old = customers.PIPELINE
    change = _change(old, _with(old, settings={"threshold": 5}))
    assert change.category == Category.STATE
    assert "settings {} -> {'threshold': 5}" in change.refusal


def test_a_plan_in_place_of_a_transform_is_a_state_change() -> None:
    new = customers.PIPELINE
    with pytest.warns(DeprecationWarning):
        old = Pipeline(
            name="customers",
            version="v0",
            transform=lambda frame: frame,
            topics=new.plan.inputs,
            table=LatestPerKey(key="customer_id"),
            table_schema=new.table_schema,
        )
    change = _change(old, new)
    assert change.category == Category.STATE
    assert change.reasons[0] == "state: declared as a plan now"
