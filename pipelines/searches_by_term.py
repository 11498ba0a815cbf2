"""searches_by_term: every search, re-keyed by its query, to the topic ``searches_by_term``
(a later pipeline counting per query then reads it co-partitioned)."""

from __future__ import annotations

from pipelines.topics import SEARCHES, SEARCHES_BY_TERM
from streaming.define import Pipeline, Stream

VERSION = "v1"

PIPELINE = Pipeline(
    name="searches_by_term",
    version=VERSION,
    plan=SEARCHES.stream().rows(),
    publish=Stream(SEARCHES_BY_TERM, key="query"),
    description="Searches keyed by their query, to the topic searches_by_term.",
)
