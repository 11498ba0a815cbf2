"""An every-match left join of two streams (clicks with every search of the user in the 10
minutes before them, ``stream.join_within``) against the embedded broker and a real
SparkSession: at every commit, in batches of 997 and of the whole log, the table equals a
plain-Python evaluation on the offsets the commit records; a click without a search appears
once its window closed, and stays."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bench.support.producing import clickstream, send
from bench.support.reference import replay_stamped
from pipelines.topics import CLICKS, SEARCHES
from streaming.define import Pipeline
from tests.integration.helpers import check_commits, run_until_caught_up
from tests.support.join_references import clicks_with_searches_reference

pytestmark = pytest.mark.integration

PLAN = CLICKS.stream().join_within(
    SEARCHES.stream(),
    on="user_id",
    key="click_id",
    other_key="query",
    columns={"ts": "search_ts"},
    before=timedelta(minutes=10),
    how="left",
)
PIPELINE = Pipeline(name="clicks_with_searches", version="v1", plan=PLAN)
KEY = ("click_id", "query")


def test_an_every_match_left_join_equals_the_reference_at_every_commit(spark, settings, broker):
    send(settings, clickstream(1500, seed=91))
    records = replay_stamped(settings.kafka.bootstrap_servers, ["clicks", "searches"])
    finals = []
    for version, cap in (("cap997", 997), ("whole", 250_000)):
        run_until_caught_up(spark, settings, PIPELINE, version=version, max_offsets_per_trigger=cap)
        _, final = check_commits(
            settings, PIPELINE.name, version, records, clicks_with_searches_reference, KEY
        )
        finals.append(final)
    assert finals[0] == finals[1]
    alone = [k for k in finals[0] if k[1] is None]
    assert alone and len(alone) < len(finals[0])
