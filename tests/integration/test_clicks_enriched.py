"""clicks_enriched (a stream-stream join within 10 minutes, latest match) against the embedded
broker and a real SparkSession, compared with a plain-Python evaluation at every commit and
across batch caps; exactly the late records are dead-lettered as ``late``."""

from __future__ import annotations

import pytest

from kappa.testing.enrichment import clicks_reference
from kappa.testing.producing import clickstream, send
from kappa.testing.reference import replay_stamped
from streaming.delta.table_reader import commits, read_arrow
from streaming.run.deployment import Deployment
from tests.integration.helpers import run_until_caught_up

pytestmark = pytest.mark.integration


def test_clicks_equal_the_reference_at_every_commit_whatever_the_batching(spark, settings, broker):
    send(settings, clickstream(1500, seed=51))
    records = replay_stamped(settings.kafka.bootstrap_servers, ["clicks", "searches"])
    finals = []
    for version, cap in (("v1", 200), ("cap997", 997)):
        run_until_caught_up(
            spark, settings, "clicks_enriched", version=version, max_offsets_per_trigger=cap
        )
        deployment = Deployment("clicks_enriched", version, settings.home)
        history = commits(deployment.table_path)
        for commit in history:
            prefix = {
                t: {int(p): o for p, o in parts.items()} for t, parts in commit.end_offsets.items()
            }
            expected, late = clicks_reference(records, prefix)
            rows = read_arrow(deployment.table_path, commit.table_version).to_pylist()
            actual = {r["click_id"]: r for r in rows}
            assert actual == expected, f"{version} batch {commit.batch_id}"
        dead = read_arrow(deployment.dead_letter_path).to_pylist()
        assert {(r["topic"], r["partition"], r["offset"]) for r in dead} == late
        finals.append(actual)
    assert finals[0] == finals[1]
    assert any(r["search_query"] for r in finals[0].values())
    assert any(r["search_query"] is None for r in finals[0].values())
