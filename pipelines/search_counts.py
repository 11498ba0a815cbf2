"""search_counts: how many times each query was searched, from the topic searches_by_term."""

from __future__ import annotations

from pipelines.topics import SEARCHES_BY_TERM
from quality.rules import Between
from streaming.define import Count, Pipeline

VERSION = "v1"

PIPELINE = Pipeline(
    name="search_counts",
    version=VERSION,
    plan=SEARCHES_BY_TERM.stream().group_by("query", aggregations={"searches": Count()}),
    quality=(Between("searches", min_value=1),),
    description="Searches per query (from searches_by_term).",
)
