"""clicks_last_search: every click with the query of the same user's latest search in the 10 minutes
before it (null when there is none). A search arriving late within grace re-enriches the clicks
it precedes."""

from __future__ import annotations

from datetime import timedelta

from pipelines.topics import CLICKS, SEARCHES
from streaming.define import Pipeline

VERSION = "v1"

PLAN = CLICKS.stream().join_latest_within(
    SEARCHES.stream(),
    on="user_id",
    key="click_id",
    columns={"query": "search_query"},
    before=timedelta(minutes=10),
    how="left",
)

PIPELINE = Pipeline(
    name="clicks_last_search",
    version=VERSION,
    plan=PLAN,
    description="Each click with the user's latest search query in the 10 minutes before it.",
)
