"""spend_hourly (1-hour tumbling windows, grace 10 minutes, composite key) against the embedded
broker and a real SparkSession, compared with a plain-Python evaluation at every commit."""

from __future__ import annotations

import pytest

from kappa.testing.enrichment import spend_hourly_reference
from kappa.testing.producing import fraud_events, send
from kappa.testing.reference import replay_stamped
from streaming.delta.table_reader import commits, read_arrow
from streaming.run.deployment import Deployment
from tests.integration.helpers import run_until_caught_up

pytestmark = pytest.mark.integration


def test_windows_equal_the_reference_at_every_commit_whatever_the_batching(spark, settings, broker):
    send(settings, fraud_events(2000, seed=41, step_ms=10_000))  # about 5.5 hours of events
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    finals = []
    for version, cap in (("v1", 250), ("cap997", 997)):
        run_until_caught_up(
            spark, settings, "spend_hourly", version=version, max_offsets_per_trigger=cap
        )
        path = Deployment("spend_hourly", version, settings.home).table_path
        history = commits(path)
        assert len(history) >= 2
        for commit in history:
            prefix = {
                t: {int(p): o for p, o in parts.items()} for t, parts in commit.end_offsets.items()
            }
            expected, _ = spend_hourly_reference(records, prefix)
            rows = read_arrow(path, commit.table_version).to_pylist()
            actual = {(r["customer_id"], r["window_start"]): r for r in rows}
            assert actual == expected, f"{version} batch {commit.batch_id}"
        finals.append(actual)
    assert finals[0] == finals[1] and len(finals[0]) > 40
