"""The stock statistics of the seed (``stock_stats``: 1-minute tumbling windows;
``stock_moving_avg``: 5-minute windows every minute; ``stock_stats_final``: the minutes written
once, when they close, and published) against the embedded broker and a real SparkSession, run
side by side on one log of trades: at every checked commit each table equals a plain-Python
evaluation of its definition on the offsets the commit records, with one trade per batch over
the first 80 trades, then 997 and 250,000, and exactly the late trades (among them a burst two
hours old) dead-lettered. The final-results topic holds each closed window exactly once."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from functools import partial
from typing import Any

import pytest

from bench.support.producing import send, trade_events
from bench.support.reference import changelog_table, log_ends, replay_stamped
from streaming.define.registry import get_pipeline
from streaming.versions.live_pointer import claim_first
from tests.integration.helpers import (
    check_commits,
    kill_twice_mid_run,
    published_once,
    replay_published,
    run_until_caught_up,
)
from tests.support.run_together import run_together
from tests.support.seed_references import stock_moving_avg_reference, stock_stats_reference

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=50)]

KEY = ("ticker", "window_start")
FINAL = "stock_stats_final"
REFERENCES = {
    "stock_stats": stock_stats_reference,
    "stock_moving_avg": stock_moving_avg_reference,
    "stock_stats_final": partial(stock_stats_reference, final=True),
}
START_MS = 1_700_000_040_000


def rounded(row: dict[str, Any]) -> dict[str, Any]:
    """The average's last bits depend on how the sum was cast; eleven digits are exact."""
    return {**row, "avg_price": round(row["avg_price"], 11)} if "avg_price" in row else row


def test_stock_statistics_equal_the_reference_at_every_commit_whatever_the_batching(
    spark, settings, broker
):
    pipelines = [get_pipeline(settings.pipelines, name) for name in REFERENCES]
    # Only the live version publishes: "cap1" writes the final-results topic, and the other
    # versions follow it (they never read past its last commit).
    claim_first(settings.home, "stock_stats_final", "cap1", "first deployment")
    send(settings, trade_events(80, seed=71, start_ms=START_MS))
    run_together(spark, settings, [(p, "cap1") for p in pipelines], max_offsets_per_trigger=1)
    later = START_MS + 80 * 4_000
    send(settings, trade_events(1_400, seed=72, start_ms=later, late_burst_at=700))
    for version, cap in (("cap1", 997), ("cap997", 997), ("whole", 250_000)):
        runs = [(p, version) for p in pipelines]
        run_together(spark, settings, runs, max_offsets_per_trigger=cap)

    records = replay_stamped(settings.kafka.bootstrap_servers, ["trades"])
    assert {r.partition for r in records} == {0, 1, 2, 3}, "a partition without trades"
    burst = {(r.topic, r.partition, r.offset) for r in records if b"-late" in (r.value or b"")}
    for name, reference in REFERENCES.items():
        _, late = reference(records, log_ends(records))
        assert len(burst) == 20 and burst <= late
        finals = []
        for version, every in (("cap1", 40), ("cap997", 1), ("whole", 1)):
            _, final = check_commits(
                settings, name, version, records, reference, KEY, every, rounded
            )
            finals.append(final)
        assert finals[0] == finals[1] == finals[2] and len(finals[0]) > 50, name

    # The final-results topic: each window of the final table once, with its final values.
    expected, _ = stock_stats_reference(records, log_ends(records), final=True)
    published = replay_published(settings, "stock_stats_final")
    keys = Counter(r.key for r in published)
    assert set(keys.values()) == {1} and len(keys) == len(expected)
    for record in published:
        row = json.loads(record.value)
        key = (row["ticker"], row["window_start"])
        assert json.loads(record.key) == {"ticker": key[0], "window_start": key[1]}
        want = expected[key]
        for column in ("min_price", "max_price"):
            assert Decimal(str(row[column])) == want[column]
        assert rounded(row)["avg_price"] == rounded(want)["avg_price"]
        assert (row["trade_count"], row["volume"]) == (want["trade_count"], want["volume"])


def test_final_windows_after_sigkills_mid_publication_are_published_once(spark, settings, broker):
    # Each kill lands between a batch's publication to the topic and the table's commit of it.
    send(settings, trade_events(3000, seed=73, start_ms=START_MS, late_burst_at=1500))
    first, second = kill_twice_mid_run(
        settings, FINAL, max_offsets=100, batches=3, publishing_to=FINAL
    )
    assert 3 <= first < second < 30
    run_until_caught_up(spark, settings, FINAL, max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, ["trades"])
    reference = REFERENCES[FINAL]
    commits, table = check_commits(settings, FINAL, "v1", records, reference, KEY, 1, rounded)
    assert commits > second and len(table) > 500

    # Read committed, the topic holds each window once (the killed batches' too): the table.
    published = replay_published(settings, FINAL)
    assert {first, second} <= set(published_once(published, f"{FINAL}__v1"))
    assert len(published) == len({r.key for r in published}) == len(table)
    topic = changelog_table(published)
    assert {(row["ticker"], row["window_start"]) for row in topic.values()} == set(table)
