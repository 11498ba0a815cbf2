"""What the shared cuts of the log cost a replay: ``python -m bench.cut_cost``.

    flock /tmp/kappa-heavy.lock .venv/bin/python -m bench.cut_cost --events 1000000

On a fresh embedded broker and platform home: the bench workload (``bench/workload.py``), then
cold rebuilds of ``customers`` from offset 0 in new processes (``python -m streaming run
customers --until-caught-up``, batches of at most ``--batch`` records, 250,000 as a deployment
reads a backlog), alternating between

- no cuts (``KAPPA_CUTS_ENABLED=false``): batches end where the read limit puts them;
- cuts: a cut log holding a cut every ``--cut-every`` records of the log, what a platform taking
  a cut every 0.5 s at 5,000 events/s leaves behind (one per 2,500 records); every batch ends at
  the newest cut within its read limit.

Prints, per run, the wall time (with start-up), the time after start-up, the batches and how
many ended at a cut, and whether the table equals the workload's reference. The difference of
the medians is the cuts' cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from typing import Any

from bench.measures import UNALIGNED, BenchEnv, check_table
from bench.workload import TOPIC, Workload
from kappa.broker import EmbeddedBroker
from streaming.delta.table_reader import commits
from streaming.home import Home
from streaming.kafka import offsets as off
from streaming.kafka.admin import ensure_topics
from streaming.kafka.cuts import CutLog


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.cut_cost", description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--cut-every", type=int, default=2_500, help="records of the log per cut")
    p.add_argument("--repeat", type=int, default=2, help="rebuilds of each kind")
    p.add_argument("--batch", type=int, default=250_000, help="most records per batch")
    return p.parse_args(argv)


def seed_cuts(home: Home, ends: dict[int, int], every: int) -> int:
    """A cut every ``every`` records of the topic, each partition in proportion to its end, as
    cuts taken at a steady rate would lie; the newest taken just now."""
    total = sum(ends.values())
    steps = total // every
    now = int(time.time() * 1000)
    log = CutLog(home.cuts)
    for step in range(1, steps + 1):
        at = {TOPIC: {p: end * step // steps for p, end in ends.items()}}
        log.take(
            [TOPIC], lambda topics, at=at: at, now_ms=lambda step=step: now - (steps - step) * 500
        )
    return steps


def rebuild(
    bench: BenchEnv, workload: Workload, version: str, cuts: bool, batch: int
) -> dict[str, Any]:
    env = {**bench.env, "KAPPA_CUTS_ENABLED": str(cuts).lower()}
    job = BenchEnv(bench.home, env, bench.bootstrap, bench.kafka_client).streaming(
        version,
        "--version",
        version,
        "--until-caught-up",
        "--max-offsets-per-trigger",
        str(batch),
        *UNALIGNED,
    )
    job.start().wait(1800)
    finished = job.finished()
    path = bench.table_path(version)
    cut_offsets = {
        off.dumps(c.on({TOPIC: [0, 1, 2, 3]}) or {}) for c in CutLog(Home(bench.home).cuts).cuts()
    }
    history = commits(path)
    return {
        "cuts": cuts,
        "wall_s": round(job.wall_s, 2),
        "excl_start_s": round(float(finished["duration_s"]), 2),
        "batches": len(history),
        "at_a_cut": sum(off.dumps(c.end_offsets) in cut_offsets for c in history),
        "correct": check_table(path, workload.expected)["ok"],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    bench, settings = BenchEnv.private("kappa-cut-cost-")
    home = bench.home
    broker = EmbeddedBroker(settings)
    broker.start()
    runs = []
    try:
        ensure_topics(settings, [TOPIC])
        workload = Workload(keys=args.keys, seed=1)
        workload.produce(bench.bootstrap, args.events)
        cuts = seed_cuts(Home(home), bench.topic_end(), args.cut_every)
        print(f"load before: {os.getloadavg()}; {args.events:,} events, {cuts} cuts seeded")
        for i in range(args.repeat):
            for with_cuts in (False, True):
                version = f"{'cuts' if with_cuts else 'plain'}-{i}"
                runs.append(rebuild(bench, workload, version, with_cuts, args.batch))
                print(runs[-1], flush=True)
    finally:
        broker.stop()
        shutil.rmtree(home, ignore_errors=True)
    print(f"load after: {os.getloadavg()}")
    for kind in (False, True):
        mine = [r for r in runs if r["cuts"] is kind]
        wall = statistics.median(r["wall_s"] for r in mine)
        print(
            f"{'cuts' if kind else 'no cuts'}: wall median {wall:.2f} s, "
            f"after start-up {statistics.median(r['excl_start_s'] for r in mine):.2f} s, "
            f"batches {[r['batches'] for r in mine]}, at a cut {[r['at_a_cut'] for r in mine]}"
        )
    return 0 if all(r["correct"] for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
