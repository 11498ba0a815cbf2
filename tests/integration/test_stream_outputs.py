"""Stream outputs against the embedded broker and a real SparkSession: ``large_trades`` (trades
of a notional of 100,000 or more, to the topic ``large_trades`` keyed by ticker),
``searches_by_term`` (searches re-keyed by their query) and ``search_counts`` (a table over the
topic ``searches_by_term``). At every checked commit each table equals a plain-Python evaluation
on the offsets it records, with one record per batch over the log's start, then 997 and
250,000; each output topic holds every record of its reference once for ``read_committed``
readers, also across SIGKILLs between a batch's publication and its commit. Rows routed by a
column's value reach each its topic, once."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from bench.support.producing import clickstream, send, trade_events
from bench.support.reference import log_ends, replay_stamped
from streaming.define import Pipeline, Stream, Topic
from streaming.define.registry import get_pipeline
from streaming.deployment import Deployment
from streaming.run.changelog_publisher import ChangelogPublisher
from streaming.versions.live_pointer import claim_first
from tests.integration.helpers import (
    check_commits,
    kill_twice_mid_run,
    replay_published,
    run_until_caught_up,
)
from tests.support.run_together import run_together
from tests.support.stream_references import (
    TRADE,
    large_trades_reference,
    read_back,
    search_counts_reference,
    searches_by_term_reference,
    topic_records,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=65)]

POSITION = ("partition", "offset")
STREAMS = {"large_trades": large_trades_reference, "searches_by_term": searches_by_term_reference}
CAPS = (("cap1", 997), ("cap997", 997), ("whole", 250_000))
START_MS = 1_700_000_040_000


def _check_all_commits(settings, name, reference, records, key):
    finals = []
    for version, every in (("cap1", 25), ("cap997", 1), ("whole", 1)):
        _, final = check_commits(
            settings, name, version, records, reference, key, every, expect_late=False
        )
        finals.append(final)
    assert finals[0] == finals[1] == finals[2], name
    return finals[0]


def test_stream_outputs_and_a_table_over_one_equal_the_references_whatever_the_batching(
    spark, settings, broker
):
    streams = [get_pipeline(settings.pipelines, name) for name in STREAMS]
    counts = get_pipeline(settings.pipelines, "search_counts")
    # Only the live version publishes: "cap1" writes the topics, the other versions follow.
    for name in STREAMS:
        claim_first(settings.home, name, "cap1", "first deployment")
    send(settings, trade_events(40, seed=81, start_ms=START_MS, block_share=0.2))
    send(settings, clickstream(60, seed=82, start_ms=START_MS))
    run_together(spark, settings, [(p, "cap1") for p in streams], max_offsets_per_trigger=1)
    run_until_caught_up(spark, settings, counts, version="cap1", max_offsets_per_trigger=1)
    later = START_MS + 3_600_000
    send(settings, trade_events(1_200, seed=83, start_ms=later, block_share=0.2))
    send(settings, clickstream(1_500, seed=84, start_ms=later))
    for version, cap in CAPS:  # the topics are whole once cap1 ran, before search_counts reads
        run_together(spark, settings, [(p, version) for p in streams], max_offsets_per_trigger=cap)
    for version, cap in CAPS:
        run_until_caught_up(spark, settings, counts, version=version, max_offsets_per_trigger=cap)

    records = replay_stamped(settings.kafka.bootstrap_servers, ["trades", "searches"])
    large = _check_all_commits(settings, "large_trades", large_trades_reference, records, POSITION)
    searches = _check_all_commits(
        settings, "searches_by_term", searches_by_term_reference, records, POSITION
    )
    assert 100 < len(large) < 1_240 and len(searches) > 500

    # Each topic holds each row once, keyed by the column it was re-keyed by.
    trades = read_back(replay_published(settings, "large_trades"))
    assert trades == topic_records(large, "ticker", (*TRADE, "notional"))
    by_term = read_back(replay_published(settings, "searches_by_term"))
    assert by_term == topic_records(searches, "query", ("user_id", "query", "ts"))

    # search_counts reads the topic searches_by_term, keyed by query: co-partitioned.
    topic = replay_stamped(settings.kafka.bootstrap_servers, ["searches_by_term"])
    final = _check_all_commits(settings, "search_counts", search_counts_reference, topic, "query")
    assert sum(row["searches"] for row in final.values()) == len(searches)
    assert 0 < len(final) <= 50


def test_stream_outputs_after_sigkills_mid_publication_hold_each_record_once(
    spark, settings, broker
):
    # Each kill lands between a batch's publication to the topic and the table's commit of it.
    send(settings, trade_events(2_000, seed=85, start_ms=START_MS, block_share=0.3))
    send(settings, clickstream(2_000, seed=86, start_ms=START_MS))
    topics = {"large_trades": ("ticker", (*TRADE, "notional"))}
    topics["searches_by_term"] = ("query", ("user_id", "query", "ts"))
    records = replay_stamped(settings.kafka.bootstrap_servers, ["trades", "searches"])
    for name, (key, columns) in topics.items():
        first, second = kill_twice_mid_run(
            settings, name, max_offsets=100, batches=3, publishing_to=name
        )
        assert 3 <= first < second < 30
        run_until_caught_up(spark, settings, name, max_offsets_per_trigger=500)
        reference = STREAMS[name]
        commits, table = check_commits(
            settings, name, "v1", records, reference, POSITION, expect_late=False
        )
        assert commits > second and len(table) > 300
        # Read committed, the topic holds each row once, the killed batches' too.
        published = replay_published(settings, name)
        assert {first, second} <= {r.batch for r in published}
        assert read_back(published) == topic_records(table, key, columns)
        assert len(published) == len(table)
        expected, _ = reference(records, log_ends(records))
        assert table == expected


ORDERS = Topic("orders", key="order_id", value_schema="order_id string, region string")
ROUTES = {"EU": Topic("orders_eu", key="order_id"), "US": Topic("orders_us", key="order_id")}


def _orders(batch: int) -> pa.Table:
    """Batch ``batch``'s new rows: three orders per region, and one of no region."""
    regions = ["EU", "US", "EU", "US", "EU", "US", None]
    return pa.table(
        {
            "partition": pa.array([0] * len(regions), pa.int32()),
            "offset": pa.array(range(batch * 10, batch * 10 + len(regions)), pa.int64()),
            "order_id": [f"o{batch}-{i}" for i in range(len(regions))],
            "region": pa.array(regions, pa.string()),
            "_delete": [False] * len(regions),
        }
    )


def test_routed_rows_reach_their_topics_once_in_one_transaction_per_batch(settings, broker):
    stream = Stream(ROUTES, key="order_id", by="region")
    pipeline = Pipeline(name="routed", version="v1", plan=ORDERS.stream().rows(), publish=stream)
    output = pipeline.stream_output
    assert output is not None
    deployment = Deployment(pipeline.name, "v1", settings.home)
    driver = ChangelogPublisher(settings, deployment, output.topics[0], ("order_id",), output)
    sent = []
    try:
        for batch in (0, 0, 1):  # batch 0 replayed: its position says it was published
            with driver.batch(batch) as publisher:
                assert publisher is not None
                sent.append(publisher.publish(2, _orders(batch)))
    finally:
        driver.close()
    assert sent == [6, 0, 6]
    for region, topic in (("EU", "orders_eu"), ("US", "orders_us")):
        records = replay_published(settings, topic)
        keys = sorted(r.key.decode() for r in records)
        assert keys == sorted(
            f"o{b}-{i}" for b in (0, 1) for i in range(6) if i % 2 == (region == "US")
        )
        assert {json.loads(r.value)["region"] for r in records} == {region}
