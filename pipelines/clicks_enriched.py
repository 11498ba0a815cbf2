"""clicks_enriched: the seed's click-stream enrichment. Each click left-joined to the user's
profile as of the click (``age``, ``gender``, ``zip_code``; null when the user has none), then to
the same user's searches in the second before it: ``search_terms``, the terms of every search
with ``ts`` in [click ts - 1 s, click ts] as a JSON list in event-time order (null when there is
none), and ``search_count``.

One stateful function per user reads ``profiles``, ``searches`` and ``clicks``. ``profiles`` is a
changelog: a deletion (a tombstone, at its record timestamp) removes the profile, so the clicks
after it have none until a new version comes. At equal event times ``profiles`` come first, then
``searches``, then ``clicks``: a profile version or a search at the click's very millisecond
counts for it; two versions at one event time, the later offset wins. A profile or search that
arrives out of order within grace corrects the clicks after it.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pipelines.topics import CLICKS, PROFILES, SEARCHES
from streaming.define import KeyState, ListOf, Pipeline, Value, stateful

VERSION = "v2"
PROFILE = ("age", "gender", "zip_code")
ENRICHED = "click_id string, user_id string, url string, ts bigint, age bigint, gender string, "
ENRICHED += "zip_code string, search_terms string, search_count bigint"
# A search at t is seen by the events before t + ttl: the clicks from t to t + 1 s.
WITHIN = timedelta(seconds=1, milliseconds=1)


@stateful(
    by="user_id",
    key="click_id",
    emits=ENRICHED,
    state={"profile": Value(dict), "searches": ListOf(str, ttl=WITHIN)},
)
def enrich(record: dict[str, Any], state: KeyState) -> dict[str, Any] | None:
    if state.input == "profiles" and state.tombstone:
        state.profile.clear()
    elif state.input == "profiles":
        state.profile.set({c: record[c] for c in PROFILE})
    elif state.input == "searches":
        state.searches.append(record["query"])
    else:
        terms = state.searches.get()
        click = {c: record[c] for c in ("click_id", "user_id", "url", "ts")}
        profile = state.profile.get() or dict.fromkeys(PROFILE)
        found = {"search_terms": json.dumps(terms) if terms else None, "search_count": len(terms)}
        return {**click, **profile, **found}
    return None


PLAN = PROFILES.stream().process(enrich, SEARCHES.stream(), CLICKS.stream())

PIPELINE = Pipeline(
    name="clicks_enriched",
    version=VERSION,
    plan=PLAN,
    description="Each click with its user's profile and the search terms of the second before.",
)
