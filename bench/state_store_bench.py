"""What persisting operator state costs per batch, next to small and large states.

A state of N rows (N = 100k, 1M, 4M) takes batches that each change 5,000 rows (2,500 deleted,
5,000 inserted). Prints the median seconds and bytes of a batch's changelog write, the
snapshot's cost, and the load time (snapshot plus changelogs). Run under the heavy lock:

    flock /tmp/kappa-heavy.lock .venv/bin/python -m bench.state_store_bench
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

from streaming.state import StateStore, TableDelta, apply_state_delta, with_key

KEY = ("id",)


def _rows(ids: np.ndarray) -> pa.Table:
    return with_key(
        pa.table(
            {
                "id": pa.array(np.char.add("k", ids.astype("U12"))),
                "t": pa.array(ids * 10),
                "v": pa.array(ids % 997),
            }
        ),
        KEY,
    )


def measure(rows: int, batches: int, batch: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory:
        store = StateStore(directory, min_snapshot_bytes=1 << 40)
        store.load(None)
        initial = _rows(np.arange(rows))
        state = {"t": initial}
        store.write(0, {"t": TableDelta(None, initial)}, state)
        started = time.perf_counter()
        store.snapshot(state)
        snapshot_s = time.perf_counter() - started
        writes, sizes = [], []
        next_id = rows
        rng = np.random.default_rng(1)
        for batch_id in range(1, batches + 1):
            doomed = _rows(rng.integers(0, next_id, batch // 2)).select(list(KEY))
            fresh = _rows(np.arange(next_id, next_id + batch))
            next_id += batch
            delta = {"t": TableDelta(doomed, fresh)}
            state = apply_state_delta(state, delta)
            started = time.perf_counter()
            store.write(batch_id, delta, state)
            writes.append(time.perf_counter() - started)
            sizes.append(os.path.getsize(os.path.join(directory, f"changelog-{batch_id:020d}.kst")))
        started = time.perf_counter()
        StateStore(directory).load(batches)
        load_s = time.perf_counter() - started
    return {
        "write_ms": statistics.median(writes) * 1000,
        "bytes": statistics.median(sizes),
        "snapshot_s": snapshot_s,
        "load_s": load_s,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100000,1000000,4000000")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch", type=int, default=5000)
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()}", flush=True)
    header = f"{'state rows':>11} {'write ms/batch':>15} {'changelog KB':>13}"
    print(f"{header} {'snapshot s':>11} {'load s':>7}")
    for rows in (int(r) for r in args.rows.split(",")):
        m = measure(rows, args.batches, args.batch)
        print(
            f"{rows:>11,} {m['write_ms']:>15.2f} {m['bytes'] / 1024:>13.1f} "
            f"{m['snapshot_s']:>11.2f} {m['load_s']:>7.2f}",
            flush=True,
        )
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
