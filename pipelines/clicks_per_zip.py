"""clicks_per_zip: clicks counted per zip code of the user's profile and hour of event time.

A plan over ``clicks_enriched``'s plan: each click with the profile as of the click, re-keyed by
the profile's zip code and regrouped into hours. A click whose profile is corrected (a version
or a deletion that arrives out of order within grace) moves to its new zip code, or out of the
counts; clicks of users with no profile then are not counted.
"""

from __future__ import annotations

from datetime import timedelta

import pyarrow.compute as pc

from pipelines.clicks_enriched import PLAN as CLICKS_ENRICHED
from quality.rules import Between
from streaming.define import Count, Pipeline, Tumbling

VERSION = "v1"

PLAN = CLICKS_ENRICHED.where(pc.field("zip_code").is_valid()).group_by(
    "zip_code", window=Tumbling(timedelta(hours=1)), time="ts", aggregations={"clicks": Count()}
)

PIPELINE = Pipeline(
    name="clicks_per_zip",
    version=VERSION,
    plan=PLAN,
    quality=(Between("clicks", min_value=1),),
    description="Clicks per zip code of the user's profile and hour of event time.",
)
