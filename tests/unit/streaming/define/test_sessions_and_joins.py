"""Session windows and every-match stream-stream joins as the authoring API declares them: keys,
columns, the key columns a row may leave null, and the quality checks that follow."""

from __future__ import annotations

from datetime import timedelta

import pytest

from quality.suites import table_checks
from streaming.define import Count, Pipeline, Session, Topic
from streaming.errors import DefineError

CLICKS = Topic(
    "clicks", key="user", value_schema="click_id string, user string, ts bigint", time="ts"
)
SEARCHES = Topic(
    "searches", key="user", value_schema="search_id string, user string, q string, ts bigint"
)


def test_a_session_row_is_keyed_by_its_start_and_holds_its_last_records_time() -> None:
    plan = CLICKS.stream().group_by(
        "user", window=Session(gap=timedelta(minutes=30)), aggregations={"clicks": Count()}
    )
    assert plan.key == ("user", "session_start") and plan.nullable_key == ()
    assert plan.table_schema().names == ["user", "session_start", "session_end", "clicks"]


def _join(how: str):  # type: ignore[no-untyped-def]
    return CLICKS.stream().join_within(
        SEARCHES.stream(),
        on="user",
        key="click_id",
        other_key="search_id",
        columns={"q": "query"},
        before=timedelta(minutes=10),
        how=how,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("how", "nullable"),
    [("inner", ()), ("left", ("search_id",)), ("outer", ("click_id", "search_id"))],
)
def test_an_every_match_join_is_keyed_by_both_records_and_says_which_may_be_null(
    how: str, nullable: tuple[str, ...]
) -> None:
    plan = _join(how)
    assert plan.key == ("click_id", "search_id") and plan.nullable_key == nullable
    assert plan.table_schema().names == ["click_id", "user", "ts", "query", "search_id"]
    spec = Pipeline(name="pairs", version="v1", plan=plan).quality_spec
    not_null = {c.name for c in table_checks(spec, 0) if c.name.startswith("not_null")}
    expected = {f"not_null({k})" for k in ("click_id", "search_id") if k not in nullable}
    assert spec.nullable_keys == nullable and not_null == expected


def test_an_every_match_join_refuses_what_it_cannot_do() -> None:
    with pytest.raises(DefineError, match="'inner', 'left' or 'outer'"):
        _join("right")
    with pytest.raises(DefineError, match="no column 'nope'"):
        CLICKS.stream().join_within(
            SEARCHES.stream(),
            on="user",
            key="click_id",
            other_key="nope",
            columns={},
            before=timedelta(minutes=1),
        )
