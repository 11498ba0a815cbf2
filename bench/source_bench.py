"""Spark's own Kafka source against the platform's Python Data Source, on the same log.

    make bench-source [ARGS="--events 2000000 --repeats 3"]

One embedded broker holds ``--events`` customer events (``bench.workload``, 4 partitions). One
SparkSession, with Spark's Kafka connector on its class path (``platform/jvm/spark-kafka.xml``),
reads them with each source in turn, the order alternating between repeats:

- replay: an availableNow query from the earliest offsets, ``maxOffsetsPerTrigger`` records per
  batch; each batch is decoded as the platform decodes it (``streaming.kafka.value_decoder``: in
  the Python source where it reads, after Spark's source with ``mapInArrow``) and counted. Wall
  time, events/s, and CPU seconds of the whole process tree (driver, JVM, Python workers).
- steady state: a continuous query (trigger every ``--trigger`` s) while a producer writes
  ``--rate`` events/s for ``--seconds``; the per-batch latency (Spark's ``triggerExecution``)
  p50/p95 and the CPU the tree uses per second.

Before a figure counts, its run must have read every record exactly once: the decoded count
equals the records produced, with no decoding error. Each figure is the median of the repeats,
and the table gives the ratio of the two sources from this run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa

from bench.support.settings import private_settings
from bench.workload import TOPIC, Workload
from kappa.broker import EmbeddedBroker
from streaming.jars import SPARK_KAFKA, classpath
from streaming.kafka.admin import ensure_topics
from streaming.settings import Settings

SOURCES = ("python", "spark")
# The steady-state runs write their own topic, so the replays read the same log every time.
STEADY_TOPIC = "customers_steady"
# The value schema the customers pipeline declares (pipelines/customers.py), spelled out so the
# bench does not depend on the pipeline registry.
VALUE_SCHEMA = "customer_id string, name string, email string, country string, updated_at bigint"


@dataclass
class Replay:
    seconds: float
    cpu_s: float
    records: int
    errors: int
    batches: int


@dataclass
class Steady:
    batch_ms: list[float] = field(default_factory=list)
    cpu_per_s: float = 0.0
    records: int = 0
    produced: int = 0


class TreeCpu:
    """CPU seconds used by this process and its descendants (Spark's JVM, Python workers)."""

    def __init__(self) -> None:
        self.me = psutil.Process()
        self.gone = 0.0  # CPU of descendants that exited since the last reading
        self.seen: dict[int, float] = {}

    def total(self) -> float:
        now: dict[int, float] = {}
        for proc in [self.me, *self.me.children(recursive=True)]:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            now[proc.pid] = times.user + times.system
        self.gone += sum(v for pid, v in self.seen.items() if pid not in now)
        self.seen = now
        return self.gone + sum(now.values())


def reader(
    spark: Any, source: str, bootstrap: str, options: dict[str, str], topic: str = TOPIC
) -> Any:
    """A streaming DataFrame of ``topic``'s decoded records from ``source``."""
    from streaming.kafka.source import FORMAT, decoded_batch
    from streaming.kafka.source_options import SourceOptions

    decoding = {"valueSchema": VALUE_SCHEMA, "requiredFields": "name,email,country"}
    decoding["acceptTombstones"] = "true"
    common = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **options}
    if source == "python":
        stream = spark.readStream.format(FORMAT)
        for key, value in {**common, **decoding}.items():
            stream = stream.option(key, value)
        return stream.load()
    parsed = SourceOptions.parse({**common, **decoding})
    decoder, schema = parsed.decoder, parsed.spark_schema()
    assert decoder is not None

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield decoded_batch(batch, decoder)

    stream = spark.readStream.format("kafka").option("kafka.isolation.level", "read_committed")
    for key, value in common.items():
        stream = stream.option(key, value)
    return stream.load().mapInArrow(decode, schema)


def counting_sink(counts: list[tuple[int, int]]) -> Callable[[Any, int], None]:
    from pyspark.sql import functions as F

    def sink(batch: Any, batch_id: int) -> None:
        row = batch.agg(F.count(F.lit(1)).alias("n"), F.count("error").alias("e")).first()
        counts.append((int(row["n"]), int(row["e"])))

    return sink


def replay(spark: Any, source: str, bootstrap: str, max_batch: int, work: Path) -> Replay:
    counts: list[tuple[int, int]] = []
    options = {"startingOffsets": "earliest", "maxOffsetsPerTrigger": str(max_batch)}
    query = (
        reader(spark, source, bootstrap, options)
        .writeStream.foreachBatch(counting_sink(counts))
        .option("checkpointLocation", str(work / f"replay-{source}-{time.time_ns()}"))
        .trigger(availableNow=True)
    )
    cpu = TreeCpu()
    cpu_before, started = cpu.total(), time.perf_counter()
    running = query.start()
    running.awaitTermination()
    seconds = time.perf_counter() - started
    return Replay(
        seconds,
        cpu.total() - cpu_before,
        sum(n for n, _ in counts),
        sum(e for _, e in counts),
        len(counts),
    )


def steady(
    spark: Any, source: str, settings: Settings, rate: float, seconds: float, trigger: float
) -> Steady:
    """A continuous query from the log's end while a producer writes ``rate`` events/s."""
    counts: list[tuple[int, int]] = []
    bootstrap = settings.kafka.bootstrap_servers
    query = (
        reader(spark, source, bootstrap, {"startingOffsets": "latest"}, STEADY_TOPIC)
        .writeStream.foreachBatch(counting_sink(counts))
        .option("checkpointLocation", tempfile.mkdtemp(prefix=f"kappa-steady-{source}-"))
        .trigger(processingTime=f"{trigger} seconds")
        .start()
    )
    result = Steady()
    try:
        while query.lastProgress is None:  # the first trigger has planned its start offsets
            query.awaitTermination(0.1)
        producing = RateProducer(bootstrap, rate, seconds)
        cpu = TreeCpu()
        cpu_before, started = cpu.total(), time.perf_counter()
        producing.start()
        seen: set[int] = set()
        while producing.is_alive():
            for progress in query.recentProgress:
                batch = int(progress["batchId"])
                if batch not in seen and progress["numInputRows"] > 0:
                    seen.add(batch)
                    result.batch_ms.append(float(progress["durationMs"]["triggerExecution"]))
            producing.join(0.5)
        result.cpu_per_s = (cpu.total() - cpu_before) / (time.perf_counter() - started)
        result.produced = producing.sent
        deadline = time.monotonic() + 60
        while sum(n for n, _ in counts) < producing.sent and time.monotonic() < deadline:
            query.awaitTermination(0.2)
        result.records = sum(n for n, _ in counts)
    finally:
        query.stop()
    return result


class RateProducer(threading.Thread):
    """Writes ``rate`` events/s to the steady-state topic for ``seconds``."""

    def __init__(self, bootstrap: str, rate: float, seconds: float) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.rate, self.seconds = bootstrap, rate, seconds
        self.sent = 0

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        workload = Workload(keys=10_000, seed=99)
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < self.seconds:
            due = int(elapsed * self.rate) - self.sent
            for key, value in workload.next_events(max(0, due)):
                producer.produce(STEADY_TOPIC, key=key, value=value)
                self.sent += 1
            producer.poll(0.005)
        producer.flush(30)


def session(settings: Settings) -> Any:
    from streaming.spark.session import build_spark_session

    jars = ",".join(str(j) for j in classpath(settings.cache_dir, SPARK_KAFKA))
    spark_settings = settings.spark.model_copy(
        update={"conf": {**settings.spark.conf, "spark.jars": jars}}
    )
    return build_spark_session(
        settings.model_copy(update={"spark": spark_settings}), app_name="kappa-source-bench"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.source_bench", description=__doc__)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--max-batch", type=int, default=250_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rate", type=float, default=5000.0, help="steady-state events/s")
    parser.add_argument("--seconds", type=float, default=30.0, help="steady-state duration")
    parser.add_argument("--trigger", type=float, default=0.5, help="steady-state trigger, s")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="kappa-source-bench-"))
    settings = private_settings(work / "home", full_jit=True, **{"broker.heap": "1g"})
    broker = EmbeddedBroker(settings)
    broker.start()
    try:
        ensure_topics(settings, [TOPIC, STEADY_TOPIC])
        workload = Workload(seed=1)
        produce_s = workload.produce(settings.kafka.bootstrap_servers, args.events)
        print(f"produced {args.events:,} events in {produce_s:.1f} s", flush=True)
        spark = session(settings)
        replays: dict[str, list[Replay]] = {s: [] for s in SOURCES}
        steadies: dict[str, list[Steady]] = {s: [] for s in SOURCES}
        for repeat in range(args.repeats):
            order = SOURCES if repeat % 2 == 0 else tuple(reversed(SOURCES))
            for source in order:
                run = replay(spark, source, settings.kafka.bootstrap_servers, args.max_batch, work)
                replays[source].append(run)
                print(
                    f"  replay {source}: {run.records:,} records in {run.seconds:.1f} s, "
                    f"cpu {run.cpu_s:.1f} s, {run.batches} batches, {run.errors} errors",
                    flush=True,
                )
            for source in order:
                run = steady(spark, source, settings, args.rate, args.seconds, args.trigger)
                steadies[source].append(run)
                print(
                    f"  steady {source}: {run.records:,}/{run.produced:,} records, "
                    f"{len(run.batch_ms)} batches, p50 {_pct(run.batch_ms, 50):.0f} ms",
                    flush=True,
                )
        print(report(replays, steadies, args))
        return 0 if verified(replays, steadies, args.events) else 1
    finally:
        broker.stop()


def verified(replays: dict[str, list[Replay]], steadies: dict[str, list[Steady]], n: int) -> bool:
    ok = all(r.records == n and r.errors == 0 for runs in replays.values() for r in runs)
    return ok and all(s.records == s.produced for runs in steadies.values() for s in runs)


def _pct(values: list[float], pct: int) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def report(
    replays: dict[str, list[Replay]], steadies: dict[str, list[Steady]], args: argparse.Namespace
) -> str:
    def figures(source: str) -> dict[str, float]:
        runs, still = replays[source], steadies[source]
        return {
            "replay events/s": statistics.median(r.records / r.seconds for r in runs),
            "replay CPU s per M events": statistics.median(r.cpu_s / r.records * 1e6 for r in runs),
            "steady batch p50 ms": statistics.median(_pct(s.batch_ms, 50) for s in still),
            "steady batch p95 ms": statistics.median(_pct(s.batch_ms, 95) for s in still),
            "steady CPU s per s": statistics.median(s.cpu_per_s for s in still),
        }

    python, spark = figures("python"), figures("spark")
    lines = [
        f"\nsources on {args.events:,} events, {args.max_batch:,} per batch; steady state "
        f"{args.rate:g} events/s, trigger {args.trigger:g} s; medians of {args.repeats}",
        f"{'measure':<28}{'python source':>15}{'spark source':>15}{'python/spark':>14}",
    ]
    for name in python:
        ratio = python[name] / spark[name] if spark[name] else float("nan")
        lines.append(f"{name:<28}{python[name]:>15,.1f}{spark[name]:>15,.1f}{ratio:>14.2f}")
    ok = verified(replays, steadies, args.events)
    lines.append(f"every run read every record once: {'yes' if ok else 'NO'}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
