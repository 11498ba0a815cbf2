"""Spark's own Structured Streaming operators as a peer, where they apply: the hourly windows
(``groupBy(window(...))`` with a watermark, update mode) and the click-search join (a left outer
stream-stream join with a time range and watermarks). Spark's Kafka source reads the topics and
its Kafka sink writes the results, keyed by the result's key, with the platform table's columns.

Latest per key and the as-of join have no Spark operator: a stream-stream join gives every
match, not the version as of a time, and Spark has no table that a changelog updates.

Spark's watermark is global (the minimum over the inputs of the largest event time seen, minus
the delay) and moves between micro-batches; what is late therefore depends on how the log was cut
into batches (``--max-offsets``), which ``semantics`` shows.

    python -m bench.peers.spark_app WORKLOAD BOOTSTRAP CHECKPOINT OUTPUT JARS MAX_OFFSETS CONF
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import Any

WATERMARK = "10 minutes"  # the platform's grace period
TRANSACTIONS = "txn_id string, customer_id string, amount decimal(18,2), ts bigint"
SEARCHES = "user_id string, query string, ts bigint"
CLICKS = "click_id string, user_id string, url string, ts bigint"


def read(spark: Any, topic: str, schema: str, bootstrap: str, max_offsets: int) -> Any:
    """The topic's values parsed, with their event time as a timestamp column."""
    from pyspark.sql import functions as F

    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_offsets))
        .load()
    )
    parsed = stream.select(F.from_json(F.col("value").cast("string"), schema).alias("v"))
    return parsed.select("v.*").withColumn("event_time", F.timestamp_millis("ts"))


def hourly_spend(spark: Any, bootstrap: str, max_offsets: int) -> tuple[Any, str]:
    from pyspark.sql import functions as F

    txns = read(spark, "transactions", TRANSACTIONS, bootstrap, max_offsets)
    windows = (
        txns.withWatermark("event_time", WATERMARK)
        .groupBy(F.window("event_time", "1 hour"), "customer_id")
        .agg(
            F.count(F.lit(1)).alias("txn_count"),
            F.sum("amount").alias("total_amount"),
            F.max("amount").alias("max_amount"),
        )
        .select(
            "customer_id",
            F.unix_millis(F.col("window.start")).alias("window_start"),
            "txn_count",
            "total_amount",
            "max_amount",
        )
    )
    key = F.concat_ws("@", "customer_id", F.col("window_start").cast("string"))
    return windows.select(key.alias("key"), _json(F.struct("*")).alias("value")), "update"


def click_search_join(spark: Any, bootstrap: str, max_offsets: int) -> tuple[Any, str]:
    from pyspark.sql import functions as F

    clicks = read(spark, "clicks", CLICKS, bootstrap, max_offsets).withWatermark(
        "event_time", WATERMARK
    )
    searches = read(spark, "searches", SEARCHES, bootstrap, max_offsets).select(
        F.col("user_id").alias("s_user"),
        F.col("query").alias("search_query"),
        F.col("ts").alias("search_ts"),
        F.col("event_time").alias("s_time"),
    )
    searches = searches.withWatermark("s_time", WATERMARK)
    joined = clicks.join(
        searches,
        F.expr(
            "user_id = s_user AND s_time BETWEEN event_time - INTERVAL 10 MINUTES AND event_time"
        ),
        "leftOuter",
    )
    rows = joined.select("click_id", "user_id", "url", "ts", "search_query", "search_ts")
    return rows.select(F.col("click_id").alias("key"), _json(F.struct("*")).alias("value")), (
        "append"
    )


def _json(column: Any) -> Any:
    """The row as a JSON object, null columns included (``to_json`` leaves them out)."""
    from pyspark.sql import functions as F

    return F.to_json(column, {"ignoreNullFields": "false"})


WORKLOADS = {"spend": hourly_spend, "clicks": click_search_join}


def main(argv: list[str]) -> int:
    if len(argv) != 7 or argv[0] not in WORKLOADS:
        print(__doc__, file=sys.stderr)
        return 2
    workload, bootstrap, checkpoint, output, jars, max_offsets, conf = argv
    from pyspark.sql import SparkSession

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    builder = SparkSession.builder.appName(f"peer-{workload}").config("spark.jars", jars)
    for key, value in json.loads(conf).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # PySpark's SparkContext installs its own SIGINT handler; the benchmark stops with SIGTERM.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    rows, mode = WORKLOADS[workload](spark, bootstrap, int(max_offsets))
    query = (
        rows.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", output)
        .option("checkpointLocation", checkpoint)
        .outputMode(mode)
        .trigger(processingTime="0 seconds")
        .start()
    )
    print("started", flush=True)
    try:
        while not stop.is_set() and query.isActive:
            query.awaitTermination(0.25)
        if query.exception() is not None:
            print(f"query failed: {query.exception()}", file=sys.stderr)
            return 1
    finally:
        query.stop()
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
