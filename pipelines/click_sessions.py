"""click_sessions: each user's sessions of clicks, a session ending after 30 minutes without a
click (event time), with 10 minutes of grace: its first and last click's time and its click count.
A click arriving late within grace that bridges two sessions merges them (both rows are deleted,
the merged one written); clicks later than grace are dead-lettered as late."""

from __future__ import annotations

from datetime import timedelta

from pipelines.topics import CLICKS
from quality.rules import Between
from streaming.define import Count, Pipeline, Session

VERSION = "v1"

PLAN = CLICKS.stream().group_by(
    "user_id",
    window=Session(gap=timedelta(minutes=30)),
    grace=timedelta(minutes=10),
    aggregations={"clicks": Count()},
)

PIPELINE = Pipeline(
    name="click_sessions",
    version=VERSION,
    plan=PLAN,
    quality=(Between("clicks", min_value=1),),
    description="Sessions of clicks per user (30-minute inactivity gap, grace 10 min).",
)
