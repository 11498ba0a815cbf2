"""A micro-batch's read with a pooled consumer against a consumer of its own, on one broker.

    python -m bench.consumer_reuse [--reads 300] [--records 50]

A live deployment reads a few records a batch: at the demo's 200 events/s over a dozen topics,
tens per batch. One embedded broker holds a 4-partition topic; each read takes the next
``--records`` records of every partition through ``streaming.kafka.reader.read_ranges``, as a
task does, alternately with a pool that keeps its consumer (the platform) and one that closes it
after each read (the baseline, a consumer per task). Before a figure counts, every read must
have returned exactly its records. Per read: wall time p50/p95, and the CPU seconds of this
process and of the broker's JVM; the last column is the ratio pooled / baseline of this run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from bench.support.producing import Out, send
from bench.support.settings import private_settings
from kappa.broker import EmbeddedBroker
from streaming.kafka.consumer_pool import ConsumerPool
from streaming.kafka.offsets import PartitionRange
from streaming.kafka.reader import read_ranges

TOPIC = "consumer-reuse"
PARTITIONS = 4  # the platform's default partitions per topic (kafka.topic_partitions)


def measure(
    client: dict[str, str],
    pools: dict[str, ConsumerPool],
    reads: int,
    records: int,
    broker: psutil.Process,
) -> dict[str, dict[str, float]]:
    """Each read with both pools (which goes first alternates), over the whole log in steps of
    ``records``."""
    spent: dict[str, dict[str, list[float]]] = {
        n: {"wall": [], "cpu": [], "broker": []} for n in pools
    }
    me = psutil.Process(os.getpid())
    for i in range(reads):
        start = i * records
        ranges = [PartitionRange(TOPIC, p, start, start + records) for p in range(PARTITIONS)]
        order = list(pools.items())
        for name, pool in order if i % 2 == 0 else order[::-1]:
            cpu, jvm, wall = _cpu(me), _cpu(broker, True), time.perf_counter()
            got = sum(b.num_rows for b in read_ranges(client, ranges, pool=pool))
            took = time.perf_counter() - wall
            if got != records * PARTITIONS:
                raise SystemExit(f"{name}: read {got} records, expected {records * PARTITIONS}")
            spent[name]["wall"].append(took)
            spent[name]["cpu"].append(_cpu(me) - cpu)
            spent[name]["broker"].append(_cpu(broker, True) - jvm)
    return {
        name: {
            "wall_p50_ms": 1000 * statistics.median(s["wall"]),
            "wall_p95_ms": 1000 * statistics.quantiles(s["wall"], n=20)[-1],
            "cpu_ms": 1000 * statistics.mean(s["cpu"]),
            "broker_cpu_ms": 1000 * statistics.mean(s["broker"]),
        }
        for name, s in spent.items()
    }


def _cpu(process: psutil.Process, children: bool = False) -> float:
    """CPU seconds of the process (and its children: the broker's JVM under its launcher)."""
    total = 0.0
    for each in [process, *(process.children(recursive=True) if children else [])]:
        times = each.cpu_times()
        total += times.user + times.system
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--records", type=int, default=50, help="records per partition a read")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kappa-bench-consumer-") as home:
        settings = private_settings(Path(home))
        broker = EmbeddedBroker(settings)
        status = broker.start()
        try:
            client = settings.kafka.client_config()
            total = args.reads * args.records
            send(
                settings,
                [
                    Out(TOPIC, f"k{i}".encode(), b"{}", partition=p)
                    for p in range(PARTITIONS)
                    for i in range(total)
                ],
            )
            pools = {"pooled": ConsumerPool(), "baseline": ConsumerPool(keep_idle=0)}
            print(f"load average before: {os.getloadavg()[0]:.2f}")
            result = measure(
                client, pools, args.reads, args.records, psutil.Process(status.pid or 0)
            )
            pools["pooled"].close()
        finally:
            broker.stop()
    print(f"{args.reads} reads of {args.records} records from each of {PARTITIONS} partitions")
    print(f"{'per read':<16} {'pooled':>9} {'baseline':>9} {'ratio':>6}")
    for measure_name in ("wall_p50_ms", "wall_p95_ms", "cpu_ms", "broker_cpu_ms"):
        pooled, base = result["pooled"][measure_name], result["baseline"][measure_name]
        ratio = pooled / base if base else float("nan")
        print(f"{measure_name:<16} {pooled:>9.2f} {base:>9.2f} {ratio:>6.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
