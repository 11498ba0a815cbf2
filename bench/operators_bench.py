"""Benchmark of the stateful operators against hand-rolled Python, in the same process.

For each operator (as-of join, 1-hour tumbling window, interval join) and batch size, the
operator and its hand-rolled baseline process the same synthetic log; the timers cover only
the processing (building the inputs is excluded for both). Prints events/s and the ratio.
``--rss`` runs each operator alone in a fresh process at 1M and 5M events and prints its peak
RSS and final state rows (bounded by the horizon, not by the log). ``--verify`` checks on a
smaller log that both produce the same output; ``--persist`` adds writing each batch's state
changes to a state store (fsync'ed) to the operators' time. ``--spark`` runs the stateful
pipelines through Spark on the executors instead, against the baseline consuming the same log
from a broker (``bench/operators_spark.py``, with options of its own). Run it under the heavy
lock:

    flock /tmp/kappa-heavy.lock .venv/bin/python -m bench.operators_bench
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bench import operators_baseline as baseline
from bench import operators_workload as wl
from streaming.operators import (
    AsOfJoin,
    Count,
    IntervalJoin,
    Max,
    Source,
    Sum,
    Tumbling,
    WindowedAggregate,
)
from streaming.state import StateStore

MS = timedelta(milliseconds=1)

GRACE = 10 * wl.MINUTE
HOUR = 60 * wl.MINUTE
PRUNE_EVERY = GRACE


def asof_operator() -> AsOfJoin:
    return AsOfJoin(
        stream=Source("transactions", time="ts"),
        table=Source("customers", time="updated_at", changelog=True),
        on=("customer_id",),
        table_key=("customer_id",),
        key_columns=("txn_id",),
        table_columns={"country": "customer_country"},
        how="left",
        grace_ms=GRACE,
        prune_every_ms=PRUNE_EVERY,
    )


def window_operator() -> WindowedAggregate:
    return WindowedAggregate(
        source=Source("transactions", time="ts"),
        key_columns=("customer_id",),
        window=Tumbling(HOUR * MS),
        aggregations={
            "txn_count": Count(),
            "total_amount": Sum("amount"),
            "max_amount": Max("amount"),
        },
        grace_ms=GRACE,
    )


def interval_operator() -> IntervalJoin:
    return IntervalJoin(
        left=Source("clicks", time="ts"),
        right=Source("searches", time="ts"),
        on=("user_id",),
        right_on=("user_id",),
        key_columns=("click_id",),
        right_columns={"query": "search_query"},
        before_ms=10 * wl.MINUTE,
        after_ms=0,
        how="left",
        pick="latest",
        grace_ms=GRACE,
        prune_every_ms=PRUNE_EVERY,
    )


CASES: dict[str, dict[str, Any]] = {
    "asof": {
        "shape": wl.ASOF,
        "operator": asof_operator,
        "batch": wl.asof_batch,
        "baseline": lambda: baseline.AsOfJoinBaseline(wl.ASOF.partitions, GRACE, PRUNE_EVERY),
        "records": lambda part: wl.records(part, "t", "c", wl.COUNTRIES),
    },
    "window": {
        "shape": wl.WINDOW,
        "operator": window_operator,
        "batch": wl.window_batch,
        "baseline": lambda: baseline.WindowBaseline(wl.WINDOW.partitions, GRACE, HOUR),
        "records": lambda part: wl.records(part, "t", "c", wl.COUNTRIES),
    },
    "interval": {
        "shape": wl.INTERVAL,
        "operator": interval_operator,
        "batch": wl.interval_batch,
        "baseline": lambda: baseline.IntervalJoinBaseline(
            wl.INTERVAL.partitions, GRACE, 10 * wl.MINUTE, PRUNE_EVERY
        ),
        "records": lambda part: wl.records(part, "k", "u", wl.QUERIES),
    },
}


def _parts(case: dict[str, Any], events: int, batch: int):
    shape = case["shape"]
    ends = wl.start_ends(shape)
    for chunk in wl.chunks(shape, events):
        for part in wl.pieces(chunk, batch, ends):
            ends = part.ends
            yield part


def run_operator(
    name: str, events: int, batch: int, keep: bool = False, persist: bool = False
) -> dict[str, Any]:
    """Run the operator over the log; with ``persist`` each batch's state delta is also
    written to a state store in a temporary directory (inside the timer)."""
    case = CASES[name]
    operator = case["operator"]()
    state = operator.initial_state()
    seconds = 0.0
    count = late = 0
    outputs = []
    with tempfile.TemporaryDirectory() as directory:
        store = StateStore(directory)
        store.load(None)
        for batch_id, part in enumerate(_parts(case, events, batch)):
            inputs = case["batch"](part)
            started = time.perf_counter()
            step = operator.step(state, inputs)
            if persist:
                store.write(batch_id, step.delta, step.state)
            seconds += time.perf_counter() - started
            state = step.state
            count += len(part)
            late += step.dead_letters.num_rows
            if keep:
                outputs.append(step.changes)
    rows = {table: state[table].num_rows for table in state}
    return {
        "seconds": seconds,
        "events": count,
        "late": late,
        "state_rows": rows,
        "outputs": outputs,
    }


def run_baseline(name: str, events: int, batch: int, keep: bool = False) -> dict[str, Any]:
    case = CASES[name]
    impl = case["baseline"]()
    seconds = 0.0
    count = 0
    outputs = []
    for part in _parts(case, events, batch):
        records = case["records"](part)
        started = time.perf_counter()
        changes = impl.process(records)
        seconds += time.perf_counter() - started
        count += len(part)
        if keep:
            outputs.append(changes)
    return {"seconds": seconds, "events": count, "late": impl.clock.late, "outputs": outputs}


def verify(name: str, events: int, batch: int) -> str:
    """Both implementations give the same output table on a smaller log."""
    mine = run_operator(name, events, batch, keep=True)
    theirs = run_baseline(name, events, batch, keep=True)
    table: dict = {}
    for changes in mine["outputs"]:
        for row in changes.to_pylist():
            table.update({_key(name, row): _value(name, row)})
    expected: dict = {}
    for changes in theirs["outputs"]:
        for key, row in changes.items():
            expected[key] = _baseline_value(name, row)
    same = table == expected
    return (
        f"{name}: {'SAME' if same else 'DIFFERENT'} output ({len(table)} rows), late "
        f"{mine['late']} vs {theirs['late']}"
    )


def _key(name: str, row: dict) -> Any:
    if name == "window":
        return (row["customer_id"], row["window_start"])
    return row["txn_id"] if name == "asof" else row["click_id"]


def _value(name: str, row: dict) -> Any:
    if name == "asof":
        return row["customer_country"]
    if name == "interval":
        return row["search_query"]
    cents = lambda d: int(d * 100)  # noqa: E731
    return (row["txn_count"], cents(row["total_amount"]), cents(row["max_amount"]))


def _baseline_value(name: str, row: tuple) -> Any:
    return row if name == "window" else row[-1]


def throughput(
    names: list[str], events: int, batches: list[int], persist: bool, repeat: int
) -> None:
    """Events/s of each operator and its baseline; with ``repeat`` > 1 the two alternate and
    each keeps its best run, so a burst of load from elsewhere skews neither."""
    header = f"{'operator':10} {'batch':>8} {'events':>9} {'operator ev/s':>14}"
    print(f"{header} {'hand-rolled ev/s':>17} {'ratio':>6}   (best of {repeat})")
    for name in names:
        for batch in batches:
            mine = theirs = 0.0
            for _ in range(repeat):
                run = run_operator(name, events, batch, persist=persist)
                mine = max(mine, run["events"] / run["seconds"])
                base = run_baseline(name, events, batch)
                theirs = max(theirs, base["events"] / base["seconds"])
            print(
                f"{name:10} {batch:>8,} {run['events']:>9,} {mine:>14,.0f} {theirs:>17,.0f} "
                f"{mine / theirs:>6.2f}   (late {run['late']:,} / {base['late']:,})",
                flush=True,
            )


def peak_rss(names: list[str], sizes: list[int], batch: int) -> None:
    print(f"{'operator':10} {'impl':12} {'events':>10} {'peak RSS MB':>12}  state rows")
    for name in names:
        for which in ("operator", "hand-rolled"):
            for events in sizes:
                out = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "bench.operators_bench",
                        "--alone",
                        name,
                        which,
                        str(events),
                        str(batch),
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=os.environ.copy(),
                ).stdout
                result = json.loads(out.strip().splitlines()[-1])
                print(
                    f"{name:10} {which:12} {result['events']:>10,} {result['rss_mb']:>12,.0f}  "
                    f"{result.get('state_rows', '')}",
                    flush=True,
                )


def alone(name: str, which: str, events: int, batch: int) -> None:
    runner: Callable[..., dict[str, Any]] = run_operator if which == "operator" else run_baseline
    result = runner(name, events, batch)
    result.pop("outputs")
    result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--spark" in argv:
        from bench import operators_spark

        return operators_spark.main([a for a in argv if a != "--spark"])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batches", default="250000,5000")
    parser.add_argument("--only", default="asof,window,interval")
    parser.add_argument("--rss", action="store_true", help="peak RSS at 1M and 5M events")
    parser.add_argument("--repeat", type=int, default=1, help="alternate runs, keep the best")
    parser.add_argument("--persist", action="store_true", help="operators also persist state")
    parser.add_argument("--verify", type=int, default=0, help="check outputs on N events")
    parser.add_argument("--alone", nargs=4, metavar=("NAME", "IMPL", "EVENTS", "BATCH"))
    parser.add_argument(
        "--spark", action="store_true", help="the pipelines through Spark: see --spark --help"
    )
    args = parser.parse_args(argv)
    names = args.only.split(",")
    if args.alone:
        name, which, events, batch = args.alone
        alone(name, which, int(events), int(batch))
        return 0
    print(f"load average before: {os.getloadavg()}", flush=True)
    if args.verify:
        for name in names:
            print(verify(name, args.verify, 5_000), flush=True)
    if args.rss:
        peak_rss(names, [1_000_000, 5_000_000], 250_000)
    else:
        batches = [int(b) for b in args.batches.split(",")]
        throughput(names, args.events, batches, args.persist, args.repeat)
    print(f"load average after: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
