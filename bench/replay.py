"""Replay speed: hours of demo traffic, rebuilt from the log.

For each duration (default 1 h and 24 h) a fresh embedded Kafka broker gets that much demo
traffic at the demo's rate (200 events/s) with the record-batch structure the demo producer gives
it: the producer lingers ``producer.linger_ms``, so each partition gets one batch per linger
period holding that period's records. The traffic is produced fast by sending
each topic's records in batches of exactly that size. Then, in the same run:

- baseline: one plain confluent-kafka consumer reads every topic end to end;
- rebuild: ``python -m streaming run PIPELINE --until-caught-up`` per demo pipeline in a new
  process, wall time including Python and Spark start-up; the customers table is compared with an
  independent replay, customer_spend's transaction count with the log's;
- end probe: what a continuous query pays every trigger to learn the log's end.

Usage: ``python -m bench.replay [--hours 1 --hours 24] [--rate 200] [--linger-ms 1000 ...]``;
run it under the shared heavy-run lock. Prints a table and writes ``bench/results/replay-*.json``.

A/B of one pipeline's rebuild, in the same run on the same log:
``python -m bench.replay --pipeline customers --events 2000000 --linger-ms 50 --repeat 2
--baseline-tree /path/to/other/checkout``: only the pipeline's topic is produced (``--events``
counts its records), and the rebuilds alternate between the other checkout's code and this one's,
each a new version checked against the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from bench.support.reference import customers_state, replay, table_state
from bench.support.settings import private_settings
from kappa.broker import EmbeddedBroker
from kappa.demo import CUSTOMERS_TOPIC, TRANSACTIONS_TOPIC, events
from streaming.delta.table_reader import read_arrow
from streaming.deployment import Deployment
from streaming.kafka.admin import ensure_topics
from streaming.kafka.log import KafkaLog
from streaming.settings import REPO_ROOT, Settings

TOPICS = (CUSTOMERS_TOPIC, TRANSACTIONS_TOPIC)
PIPELINES = {"customers": CUSTOMERS_TOPIC, "customer_spend": TRANSACTIONS_TOPIC}


def batch_sizes(sample: list[str], rate: float, partitions: int, linger_ms: int) -> dict[str, int]:
    """Records per batch per topic when ``rate`` events/s spread over ``partitions`` partitions
    per topic and the producer lingers ``linger_ms``."""
    sizes = {}
    for topic in TOPICS:
        per_partition = rate * sample.count(topic) / len(sample) / partitions
        sizes[topic] = max(1, round(per_partition * linger_ms / 1000))
    return sizes


def produce(
    settings: Settings, hours: float, rate: float, topics: tuple[str, ...] = TOPICS
) -> dict[str, Any]:
    """``hours`` of demo events (timestamps spread at ``rate``) with the demo's batch sizes, of
    ``topics`` only (then ``hours`` counts their records alone)."""
    total = round(hours * 3600 * rate)
    start_ms = int(time.time() * 1000) - int(hours * 3600 * 1000)
    # The fraud-detection half of the demo (profiles and payments): the two pipelines rebuilt
    # below read exactly these topics.
    step_ms = max(1, round(1000 / rate))
    # The customers topic alone comes faster from a stream of profile changes only (the demo's
    # customers, tombstone share and out-of-order share) than filtered out of the whole demo.
    only = {"profile_share": 1.0, "clickstream_share": 0.0, "trade_share": 0.0}
    mix = only if topics == (CUSTOMERS_TOPIC,) else {}
    stream = (
        e for e in events(seed=7, start_ms=start_ms, step_ms=step_ms, **mix) if e.topic in topics
    )
    sample = [e.topic for e in islice(events(seed=7, start_ms=start_ms), 50_000)]
    sample = [t for t in sample if t in TOPICS]
    partitions = settings.kafka.topic_partitions
    sizes = batch_sizes(sample, rate, partitions, settings.producer.linger_ms)
    producers = {
        topic: Producer(
            {
                **settings.kafka.client_config(),
                "enable.idempotence": True,
                "acks": "all",
                "partitioner": "murmur2_random",
                "linger.ms": 30_000,  # batches close on their record count, as at 200 ev/s
                "batch.num.messages": sizes[topic],
                "batch.size": 64 << 20,
                "message.timeout.ms": 600_000,
            }
        )
        for topic in topics
    }
    failures: list[str] = []
    counts = dict.fromkeys(topics, 0)
    started = time.perf_counter()
    for i, event in enumerate(islice(stream, total)):
        producer = producers[event.topic]
        while True:
            try:
                producer.produce(
                    event.topic,
                    key=event.key.encode(),
                    value=event.value,
                    on_delivery=lambda err, msg: failures.append(str(err)) if err else None,
                )
                break
            except BufferError:
                producer.poll(0.05)
        counts[event.topic] += 1
        if i % 5000 == 0:
            producer.poll(0)
    for producer in producers.values():
        assert producer.flush(600) == 0
    if failures:
        msg = f"{len(failures)} records not delivered: {failures[0]}"
        raise RuntimeError(msg)
    batches = {t: -(-counts[t] // sizes[t]) for t in topics}
    return {
        "events": total,
        "records": counts,
        "records_per_batch": sizes,
        "batches_approx": batches,
        "batches_per_partition_approx": max(batches.values()) // partitions,
        "produce_s": round(time.perf_counter() - started, 1),
    }


def baseline(bootstrap: str, topic: str) -> tuple[int, float]:
    """One plain consumer reading ``topic`` end to end: (records, seconds)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-replay",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 10,
            "max.partition.fetch.bytes": 16 << 20,
        }
    )
    started = time.perf_counter()
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in parts])
    done: set[int] = set()
    count = 0
    while len(done) < len(parts):
        for msg in consumer.consume(10_000, timeout=1):
            err = msg.error()
            if err is None:
                count += 1
            elif err.code() == KafkaError._PARTITION_EOF:
                done.add(msg.partition())
    consumer.close()
    return count, time.perf_counter() - started


def rebuild(
    settings: Settings,
    pipeline: str,
    version: str = "v1",
    tree: Path = REPO_ROOT,
    flags: tuple[str, ...] = (),
) -> tuple[float, float]:
    """Wall seconds of a cold `python -m streaming run PIPELINE --until-caught-up` of the code
    in ``tree``, and the seconds the job itself reports from its start (after Python and Spark
    start-up) to done."""
    env = {**os.environ, **settings.to_env()}
    if tree != REPO_ROOT:
        env["PYTHONPATH"] = str(tree)  # ahead of this checkout's editable install
    command = [sys.executable, "-m", "streaming", "run", pipeline, "--until-caught-up"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--version", version, *flags],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        msg = f"{pipeline} rebuild exited {done.returncode}: {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    finished = [
        json.loads(line)
        for line in (done.stdout + done.stderr).splitlines()
        if line.startswith("{") and '"finished"' in line
    ]
    return wall, float(finished[-1]["duration_s"])


def end_probe(settings: Settings) -> dict[str, float]:
    """A fresh end listing, then three probes from the known ends (a continuous trigger's)."""
    with KafkaLog(settings.kafka.client_config(), timeout_s=60) as log:
        started = time.perf_counter()
        log.bounds(TOPICS)
        fresh = time.perf_counter() - started
        probes = []
        for _ in range(3):
            started = time.perf_counter()
            log.bounds(TOPICS)
            probes.append(time.perf_counter() - started)
    return {"fresh_listing_s": round(fresh, 3), "trigger_probe_s": round(min(probes), 3)}


def bench_settings(home: Path, linger_ms: int | None) -> Settings:
    """A private platform home whose broker has room for the log, the producer's linger set."""
    overrides: dict[str, object] = {"broker.heap": "1g"}
    if linger_ms is not None:
        overrides["producer.linger_ms"] = linger_ms
    return private_settings(home, full_jit=True, **overrides)


def measure(hours: float, rate: float, work: Path, linger_ms: int | None) -> dict[str, Any]:
    settings = bench_settings(work / f"home-{hours:g}h-{linger_ms}", linger_ms)
    broker = EmbeddedBroker(settings)
    broker.start()
    try:
        ensure_topics(settings, list(TOPICS))
        result: dict[str, Any] = {"hours": hours, "rate": rate, **produce(settings, hours, rate)}
        result["linger_ms"] = settings.producer.linger_ms
        result["probe"] = end_probe(settings)
        for pipeline, topic in PIPELINES.items():
            records, seconds = baseline(settings.kafka.bootstrap_servers, topic)
            wall, running = rebuild(settings, pipeline)
            result[pipeline] = {
                "records": records,
                "baseline_s": round(seconds, 2),
                "baseline_rps": round(records / seconds),
                "rebuild_s": round(wall, 2),
                "rebuild_rps": round(records / wall),
                "rebuild_running_s": round(running, 2),
                "rebuild_running_rps": round(records / running),
                "ratio_to_baseline": round(seconds / wall, 2),
            }
        result["correct"] = check(settings, result)
        result["data_bytes"] = _size(settings.home.broker_data)
        return result
    finally:
        broker.stop()


def customers_exact(settings: Settings, version: str = "v1") -> bool:
    """The customers table of ``version`` equals an independent replay of its topic."""
    path = Deployment("customers", version, settings.home).table_path
    table = table_state(read_arrow(path).to_pylist(), "customer_id")
    return table == customers_state(replay(settings.kafka.bootstrap_servers, CUSTOMERS_TOPIC))


def compare(
    hours: float, rate: float, work: Path, linger_ms: int | None, args: argparse.Namespace
) -> dict[str, Any]:
    """Rebuilds of one pipeline on one log, alternating the other checkout's code with this."""
    pipeline = args.pipeline
    if pipeline != "customers":
        msg = "an A/B compares the customers table with its reference: --pipeline customers"
        raise SystemExit(msg)
    settings = bench_settings(work / f"home-ab-{linger_ms}", linger_ms)
    broker = EmbeddedBroker(settings)
    broker.start()
    trees: list[tuple[str, Path, tuple[str, ...]]] = [("this", REPO_ROOT, ())]
    if args.baseline_tree:
        trees.insert(0, ("baseline", args.baseline_tree.resolve(), ()))
    for variant in args.variant or []:
        name, _, flags = variant.partition("=")
        trees.append((name, REPO_ROOT, tuple(flags.split())))
    try:
        topic = PIPELINES[pipeline]
        ensure_topics(settings, [topic])
        produced = produce(settings, hours, rate, (topic,))
        result: dict[str, Any] = {"hours": hours, "rate": rate, **produced}
        result["linger_ms"] = settings.producer.linger_ms
        records, seconds = baseline(settings.kafka.bootstrap_servers, topic)
        result["baseline_rps"] = round(records / seconds)
        runs = []
        for i in range(args.repeat):
            for name, tree, flags in trees:
                version = f"{name}{i}"
                before = os.getloadavg()[0]
                started_at = time.time()
                wall, running = rebuild(settings, pipeline, version, tree, flags)
                run = {
                    "variant": name,
                    "started_at": round(started_at, 3),
                    "records": records,
                    "wall_s": round(wall, 2),
                    "rps": round(records / wall),
                    "running_s": round(running, 2),
                    "load": [round(before, 2), round(os.getloadavg()[0], 2)],
                    "exact": customers_exact(settings, version),
                }
                runs.append(run)
                print(run, flush=True)
        result["runs"] = runs
        result["correct"] = all(r["exact"] for r in runs)
        return result
    finally:
        broker.stop()


def check(settings: Settings, result: dict[str, Any]) -> bool:
    same = customers_exact(settings)
    spend = read_arrow(Deployment("customer_spend", "v1", settings.home).table_path)
    counted = sum(spend.column("txn_count").to_pylist())
    return same and counted == result["records"][TRANSACTIONS_TOPIC]


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _print(result: dict[str, Any]) -> None:
    print(
        f"\n{result['hours']:g} h at {result['rate']:g} ev/s = {result['events']:,} events, "
        f"linger {result['linger_ms']} ms -> records per batch {result['records_per_batch']}, "
        f"~{result['batches_per_partition_approx']:,} batches per partition, produced in "
        f"{result['produce_s']} s, {result['data_bytes'] / 1e6:,.0f} MB on disk"
    )
    print(
        f"{'pipeline':<16}{'records':>12}{'baseline ev/s':>15}{'rebuild s':>11}"
        f"{'ev/s':>9}{'x baseline':>12}{'excl. start-up s':>18}{'ev/s':>9}"
    )
    for pipeline in PIPELINES:
        r = result[pipeline]
        print(
            f"{pipeline:<16}{r['records']:>12,}{r['baseline_rps']:>15,}{r['rebuild_s']:>11}"
            f"{r['rebuild_rps']:>9,}{r['ratio_to_baseline']:>12}{r['rebuild_running_s']:>18}"
            f"{r['rebuild_running_rps']:>9,}"
        )
    total = sum(result[p]["records"] for p in PIPELINES)
    wall = sum(result[p]["rebuild_s"] for p in PIPELINES)
    print(
        f"both rebuilds: {total:,} events in {wall:.1f} s = {total / wall:,.0f} ev/s; end probe: "
        f"fresh {result['probe']['fresh_listing_s']} s, per trigger "
        f"{result['probe']['trigger_probe_s']} s; correct: {result['correct']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay")
    parser.add_argument("--hours", type=float, action="append", help="default: 1 and 24")
    parser.add_argument(
        "--events", type=int, action="append", help="as many events instead of hours (repeatable)"
    )
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument(
        "--linger-ms",
        type=int,
        action="append",
        help="the producer's linger to simulate (default: producer.linger_ms); repeat to compare",
    )
    parser.add_argument("--pipeline", choices=sorted(PIPELINES), help="A/B of this rebuild only")
    parser.add_argument("--repeat", type=int, default=1, help="A/B rounds")
    parser.add_argument(
        "--baseline-tree", type=Path, help="another checkout whose rebuilds alternate with this"
    )
    parser.add_argument(
        "--variant",
        action="append",
        help="NAME=FLAGS: also rebuild with this checkout's code and these run flags",
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kappa-replay-"))
    results = []
    try:
        durations = [*(args.hours or []), *(n / args.rate / 3600 for n in args.events or [])]
        for hours in durations or [1.0, 24.0]:
            for linger_ms in args.linger_ms or [None]:
                if args.pipeline:
                    results.append(compare(hours, args.rate, work, linger_ms, args))
                    continue
                results.append(measure(hours, args.rate, work, linger_ms))
                _print(results[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = REPO_ROOT / "bench" / "results" / f"replay-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"\nwritten {out}")
    return 0 if all(r["correct"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
