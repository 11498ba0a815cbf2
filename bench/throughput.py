"""Compaction throughput of the `customers` pipeline against a same-run baseline.

    .venv/bin/python bench/throughput.py [--events 1000000] [--keys 100000]

Workload: N JSON events of about 100 bytes, `--keys` distinct keys, 4 partitions, 1% tombstones,
on a fresh embedded broker. It measures, in one run:

- baseline: one plain confluent-kafka consumer reading the topic end to end with json.loads and a
  dict update per record (a hand-rolled compaction);
- the pipeline until caught up, in a fresh process (`python -m streaming run customers
  --until-caught-up`): wall time including Python and SparkSession start;
- the pipeline in this process with Spark already warm: events/s excluding session start.

Every run checks the table equals the baseline's state; a fast wrong result fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402

from kappa.broker import EmbeddedBroker  # noqa: E402
from kappa.settings import load_settings  # noqa: E402
from kappa.topics import ensure_topics  # noqa: E402


def produce(bootstrap: str, events: int, keys: int, seed: int) -> None:
    rng = random.Random(seed)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "enable.idempotence": True, "partitioner": "murmur2_random",
                         "queue.buffering.max.messages": 1_000_000})
    for i in range(events):
        cid = f"c{rng.randrange(keys):07d}"
        value = None if rng.random() < 0.01 else json.dumps({
            "customer_id": cid, "name": f"name {i % 997}", "email": f"{cid}@example.com",
            "country": "DE", "updated_at": 1_700_000_000_000 + i}).encode()
        while True:
            try:
                producer.produce("customers", key=cid.encode(), value=value)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def baseline(bootstrap: str) -> tuple[float, dict[str, dict]]:
    started = time.perf_counter()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "baseline",
                         "enable.partition.eof": True, "auto.offset.reset": "earliest",
                         "fetch.queue.backoff.ms": 10, "enable.auto.commit": False})
    parts = consumer.list_topics("customers", timeout=10).topics["customers"].partitions
    consumer.assign([TopicPartition("customers", p, 0) for p in parts])
    state: dict[str, dict] = {}
    done: set[int] = set()
    while len(done) < len(parts):
        for msg in consumer.consume(10_000, timeout=1):
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    done.add(msg.partition())
                continue
            key = msg.key().decode()
            if msg.value() is None:
                state.pop(key, None)
            else:
                state[key] = json.loads(msg.value())
    consumer.close()
    return time.perf_counter() - started, state


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="kappa-bench-"))
    from tests.conftest import free_port

    port = free_port()
    env = {"KAPPA_HOME": str(home), "KAPPA_BROKER_PORT": str(port),
           "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}"}
    settings = load_settings(env=env)
    broker = EmbeddedBroker(settings)
    broker.start()
    try:
        ensure_topics(settings, ["customers"])
        t0 = time.perf_counter()
        produce(settings.kafka.bootstrap_servers, args.events, args.keys, args.seed)
        produce_s = time.perf_counter() - t0
        base_s, state = baseline(settings.kafka.bootstrap_servers)

        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "streaming", "run", "customers",
                        "--until-caught-up"], cwd=REPO, env={**os.environ, **env}, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cold_s = time.perf_counter() - t0

        from streaming.deployment import Deployment
        from streaming.pipelines import get_pipeline
        from streaming.runner import PipelineRunner, RunOptions
        from streaming.spark_session import build_spark_session
        from streaming.table_reader import read_arrow

        table = {r["customer_id"]: r for r in read_arrow(
            Deployment("customers", "v1", home).table_path).to_pylist()}
        correct = table.keys() == state.keys() and all(
            table[k]["updated_at"] == v["updated_at"] for k, v in state.items())

        spark = build_spark_session(settings.spark.master, settings.spark.conf)
        warm_deployment = Deployment("customers", "warm", home)
        runner = PipelineRunner(spark, get_pipeline("customers"), warm_deployment,
                                settings.kafka.client_config(), RunOptions(report_every_s=3600))
        t0 = time.perf_counter()
        runner.run()
        warm_s = time.perf_counter() - t0
        warm_table = read_arrow(warm_deployment.table_path)
        correct = correct and warm_table.num_rows == len(state)
    finally:
        broker.stop()

    n = args.events
    results = {
        "events": n, "keys": args.keys, "produce_s": round(produce_s, 2),
        "baseline_s": round(base_s, 2), "baseline_events_per_s": round(n / base_s),
        "pipeline_cold_s": round(cold_s, 2), "pipeline_cold_events_per_s": round(n / cold_s),
        "pipeline_warm_s": round(warm_s, 2), "pipeline_warm_events_per_s": round(n / warm_s),
        "cold_wall_ratio_to_baseline": round(cold_s / base_s, 2),
        "warm_throughput_ratio_to_baseline": round(base_s / warm_s, 2),
        "table_rows": len(state), "correct": correct,
    }
    for key, value in results.items():
        print(f"{key:<36} {value}")
    out = REPO / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "throughput.json").write_text(json.dumps(results, indent=2))
    return 0 if correct else 1


if __name__ == "__main__":
    raise SystemExit(main())
