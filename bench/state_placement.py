"""Where a stateful plan's state should live, measured: Spark's state store against the
platform's own state store on the executors. ``python -m bench.state_placement``.

Both run the same keyed work in a Spark Structured Streaming query on this machine's local
executors: every micro-batch of ``--rows`` events (``rate-micro-batch`` source, ``--partitions``
input partitions) adds each event to a running count per key (``--keys`` keys), and the batch's
changed counts are its output. What differs is where the counts live:

- ``spark``: ``groupBy(input partition).transformWithStateInPandas`` with a ``MapState`` per key
  (key -> count) in Spark's RocksDB state store, checkpointed by Spark. Grouping by the input
  partition is one shuffle; each key read and written is a call from the Python worker to the
  executor's state server.
- ``own``: ``foreachBatch`` -> ``mapInArrow`` over the source's partitions (no shuffle), each
  task keeping its partition's counts as a keyed Arrow table in its Python worker and writing
  the batch's changes as a changelog file of ``streaming.state.StateStore`` (snapshots when the
  changelogs outweigh them), which a task on any executor can load.

Prints per variant the median and p90 time of a batch (Spark's ``triggerExecution``) after
``--warmup`` batches, and events/s; writes nothing else.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

NONE = pa.array([], pa.int64())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.state_placement", description=__doc__.split("\n")[0]
    )
    p.add_argument("--rows", type=int, nargs="+", default=[5_000, 50_000])
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--batches", type=int, default=12)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--variants", nargs="+", default=["own", "spark"], choices=["own", "spark"])
    p.add_argument("--master", default="local[2]")
    return p.parse_args(argv)


def _keyed(df: Any, keys: int, partitions: int) -> Any:
    from pyspark.sql import functions as F

    return df.select(
        (F.col("value") % partitions).alias("p"),
        ((F.col("value") * 2654435761) % keys).alias("key"),
    )


# -- Spark's state store ----------------------------------------------------------------------


def spark_processor() -> Any:
    from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

    class Counts(StatefulProcessor):
        def init(self, handle: StatefulProcessorHandle) -> None:
            self.counts = handle.getMapState("counts", "key long", "n long")

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            import pandas as pd

            changed: dict[int, int] = {}
            for frame in rows:
                for k, n in frame["key"].value_counts().items():
                    changed[int(k)] = changed.get(int(k), 0) + int(n)
            out = []
            for k, n in changed.items():
                old = self.counts.getValue((k,))
                new = (old[0] if old else 0) + n
                self.counts.updateValue((k,), (new,))
                out.append((int(key[0]), k, new))
            yield pd.DataFrame(out, columns=["p", "key", "n"])

        def close(self) -> None:
            pass

    return Counts()


def run_spark(spark: Any, args: argparse.Namespace, rows: int, root: Path) -> list[float]:
    source = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows)
        .option("numPartitions", args.partitions)
        .load()
    )
    counted = (
        _keyed(source, args.keys, args.partitions)
        .groupBy("p")
        .transformWithStateInPandas(spark_processor(), "p long, key long, n long", "Update", "None")
    )
    query = (
        counted.writeStream.format("noop")
        .option("checkpointLocation", str(root / f"spark-{rows}"))
        .outputMode("update")
        .trigger(processingTime="0 seconds")
        .start()
    )
    return _durations(query, args)


# -- the platform's own state store, on the executors -----------------------------------------

_CACHE: dict[tuple[str, int], tuple[int, pa.Table, Any]] = {}


def _own_task(batch_id: int, state_root: str) -> Any:
    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from streaming.state import StateStore, TableDelta, apply_delta, key_mask, with_key

        received = [b for b in batches if b.num_rows]
        partition = TaskContext.get().partitionId()
        name = (state_root, partition)
        cached = _CACHE.get(name)
        if cached is None or cached[0] != batch_id - 1:
            store = StateStore(Path(state_root) / f"p{partition}")
            loaded = store.load(batch_id - 1 if batch_id > 0 else None).get("counts")
            empty = with_key(pa.table({"key": pa.array([], pa.int64()), "n": NONE}), ["key"])
            cached = (batch_id - 1, loaded if loaded is not None else empty, store)
        _, counts, store = cached
        if not received:
            _CACHE[name] = (batch_id, counts, store)
            return
        keys = pa.Table.from_batches(received).column("key")
        batch = pa.table({"key": keys}).group_by("key").aggregate([("key", "count")])
        batch = batch.rename_columns(["key", "n"])
        old = counts.filter(key_mask(counts, ["key"], batch.select(["key"])))
        joined = batch.join(old, "key", join_type="left outer", right_suffix="_old")
        new = pc.add(joined["n"], pc.fill_null(joined["n_old"], 0))
        rows = with_key(pa.table({"key": joined["key"], "n": new}), ["key"])
        delta = TableDelta(deletes=old.select(["key"]), inserts=rows)
        counts = apply_delta(counts, delta)
        assert counts is not None
        store.write(batch_id, {"counts": delta}, {"counts": counts})
        _CACHE[name] = (batch_id, counts, store)
        yield from rows.to_batches()

    return task


def run_own(spark: Any, args: argparse.Namespace, rows: int, root: Path) -> list[float]:
    state_root = root / f"own-{rows}"

    def each_batch(df: Any, batch_id: int) -> None:
        keyed = _keyed(df, args.keys, args.partitions)
        out = keyed.mapInArrow(_own_task(batch_id, str(state_root)), "key long, n long")
        out.write.format("noop").mode("overwrite").save()

    source = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows)
        .option("numPartitions", args.partitions)
        .load()
    )
    query = (
        source.writeStream.foreachBatch(each_batch)
        .option("checkpointLocation", str(root / f"own-checkpoint-{rows}"))
        .trigger(processingTime="0 seconds")
        .start()
    )
    return _durations(query, args)


# -- measuring --------------------------------------------------------------------------------


def _durations(query: Any, args: argparse.Namespace) -> list[float]:
    try:
        while query.isActive and len(query.recentProgress) < args.batches:
            time.sleep(0.2)
        progress = query.recentProgress
    finally:
        query.stop()
    return [p["durationMs"]["triggerExecution"] / 1000 for p in progress[args.warmup :]]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import sys

    from pyspark.sql import SparkSession

    # The executors' Python imports this module (its task keeps the state between batches).
    root = str(Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.getenv("PYTHONPATH")]))
    os.environ["PYSPARK_PYTHON"] = sys.executable

    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, cpus {os.cpu_count()}")
    spark = (
        SparkSession.builder.master(args.master)
        .config("spark.sql.shuffle.partitions", args.partitions)
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.log.level", "ERROR")
        .getOrCreate()
    )
    print("variant  rows/batch  keys     median_s  p90_s   events/s")
    with tempfile.TemporaryDirectory(prefix="kappa-placement-") as tmp:
        for rows in args.rows:
            for variant in args.variants:
                run = run_own if variant == "own" else run_spark
                times = sorted(run(spark, args, rows, Path(tmp)))
                median = statistics.median(times)
                p90 = times[min(len(times) - 1, round(0.9 * (len(times) - 1)))]
                print(
                    f"{variant:<7}  {rows:<10d}  {args.keys:<7d}  {median:8.3f}  {p90:6.3f}  "
                    f"{rows / median:9,.0f}",
                    flush=True,
                )
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    # Run as the importable module, so Spark ships its functions by reference and the
    # executors' Python keeps this module's state cache between tasks.
    from bench.state_placement import main as run

    raise SystemExit(run())
