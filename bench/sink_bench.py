"""Per-batch cost of the compacted-table sink against the table's size, for every table kind:
``make bench-sink``.

    make bench-sink                                   # every kind at 0.1, 1 and 10 M rows
    make bench-sink ARGS="--sizes 100000 1000000 --kinds upsert accumulate"

Kinds: ``upsert`` (``LatestPerKey`` with stored source positions, as ``customers``),
``composite`` (``ChangeRows`` keyed by customer and window start, as ``spend_hourly``),
``change_rows`` (``ChangeRows`` with one key column, as ``transactions_enriched``) and
``accumulate`` (``Accumulate`` summing into the stored rows, as ``customer_spend``). Per kind and
size a table is seeded with that many rows (1,000,000-row files, committed as one batch), then
takes batches of random changes to stored and new keys (5,000 keys a batch; deletes for the
kinds that have them), applied on the driver as ``CompactedTable.apply`` does: written as one
share, then committed with deletion vectors. The first two batches warm up (for ``accumulate``
the first builds this process's cache of the stored rows, ``streaming.delta.stored_rows``,
which costs the table once, like the key index when the sink opens). ``--merge-batches N``
also measures the delta-rs merge path on the upsert table (the baseline the deletion vectors
replaced).

Prints per kind and size the median and p90 batch time, the sink's open time (its key index is
rebuilt from the table) and the memory it took, and per kind the ratio of the largest size to
the smallest (target: at most 2x). The table read back at the end must equal a plain-Python
reference of every changed key. Exit code 0 only if every kind is right and within the target.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import write_deltalake

from streaming.define.table_kinds import Accumulate, ChangeRows, LatestPerKey, TableKind
from streaming.delta import stored_rows
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.merge_table import MergeTable
from streaming.delta.table_reader import read_arrow
from streaming.delta.table_store import TableLocation

FILE_ROWS = 1_000_000  # rows per file of the seeded table, as a rebuild writes them
PARTITIONS = 4
TARGET_RATIO = 2.0
HOUR = 3_600_000
DECIMAL = pa.decimal128(18, 2)

Expected = dict[Any, Any]  # key -> the values checked, None when deleted


@dataclass(frozen=True)
class Case:
    """One table kind: its schema, rows for seeding, random batches and what to check."""

    name: str
    schema: pa.Schema
    kind: TableKind
    seed: Callable[[int, int], pa.Table]  # rows for key numbers [start, stop), as changes
    batch: Callable[[np.random.Generator, int, int, Expected], pa.Table]  # (rng, rows, n, exp)
    checked: tuple[str, ...]  # the value columns the reference holds


def _units(values: np.ndarray) -> pa.Array:
    """Whole amounts as decimal(18, 2) (through a wider decimal: int64 needs 19 digits)."""
    return pa.array(values, pa.int64()).cast(pa.decimal128(38, 2)).cast(DECIMAL)


def _ids(numbers: np.ndarray) -> pa.Array:
    text = pc.cast(pa.array(numbers), pa.string())
    return pc.binary_join_element_wise("c", pc.utf8_lpad(text, 9, "0"), "")


def _keys(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """``n`` distinct key numbers: stored keys and, one in eleven, new ones."""
    return rng.choice(rows + rows // 10, size=n, replace=False).astype(np.int64)


# -- upsert: LatestPerKey with stored positions (customers) -----------------------------------

UPSERT = pa.schema(
    [
        ("customer_id", pa.string()),
        ("email", pa.string()),
        ("country", pa.string()),
        ("updated_at", pa.int64()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
    ]
)
UPSERT_KIND = LatestPerKey("customer_id", position=("partition", "offset"))


def _upsert_seed(start: int, stop: int) -> pa.Table:
    ids = np.arange(start, stop, dtype=np.int64)
    partitions = (ids % PARTITIONS).astype(np.int32)
    rows = {
        "customer_id": _ids(ids),
        "email": pc.binary_join_element_wise("user", pc.cast(pa.array(ids), pa.string()), "@x", ""),
        "country": pc.take(pa.array(["DE", "FR", "US", "JP"]), pa.array(partitions)),
        "updated_at": ids,
        "partition": partitions,
        "offset": ids // PARTITIONS,
        "_partition": partitions,
        "_offset": ids // PARTITIONS,
        "_delete": np.zeros(len(ids), dtype=bool),
    }
    return pa.table(rows, schema=UPSERT_KIND.change_schema(UPSERT))


class _Offsets:
    """Offsets above every seeded one, so each change is newer than the row it replaces."""

    def __init__(self) -> None:
        self.next: int | None = None

    def take(self, rows: int, n: int) -> np.ndarray:
        if self.next is None:
            self.next = (rows + PARTITIONS) // PARTITIONS + 1
        out = np.arange(self.next, self.next + n, dtype=np.int64)
        self.next += n
        return out


_OFFSETS = _Offsets()


def _upsert_batch(rng: np.random.Generator, rows: int, n: int, expected: Expected) -> pa.Table:
    numbers = _keys(rng, rows, n)
    deletes = rng.random(n) < 0.1
    offsets = _OFFSETS.take(rows, n)
    partitions = (numbers % PARTITIONS).astype(np.int32)
    keys = _ids(numbers)
    emails = pc.binary_join_element_wise("new", pc.cast(pa.array(offsets), pa.string()), "@x", "")
    for key, email, when, gone in zip(
        keys.to_pylist(), emails.to_pylist(), offsets.tolist(), deletes.tolist(), strict=True
    ):
        expected[key] = None if gone else (email, when)
    batch = {
        "customer_id": keys,
        "email": emails,
        "country": pa.array(["DE"] * n),
        "updated_at": offsets,
        "partition": partitions,
        "offset": offsets,
        "_partition": partitions,
        "_offset": offsets,
        "_delete": deletes,
    }
    return pa.table(batch, schema=UPSERT_KIND.change_schema(UPSERT))


# -- composite: ChangeRows keyed by (customer_id, window_start) (spend_hourly) ----------------

WINDOWS = pa.schema(
    [
        ("customer_id", pa.string()),
        ("window_start", pa.int64()),
        ("txn_count", pa.int64()),
        ("total_amount", DECIMAL),
        ("max_amount", pa.float64()),
    ]
)
WINDOW_KIND = ChangeRows("customer_id", also=("window_start",))


def _window_key(numbers: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Key number -> (customer, hour): eight windows per customer."""
    return _ids(numbers // 8), (numbers % 8) * HOUR


def _window_rows(numbers: np.ndarray, counts: np.ndarray, deletes: np.ndarray) -> pa.Table:
    customers, starts = _window_key(numbers)
    rows = {
        "customer_id": customers,
        "window_start": starts,
        "txn_count": counts,
        "total_amount": _units(counts * 125),
        "max_amount": counts * 2.5,
        "_delete": deletes,
    }
    return pa.table(rows, schema=WINDOW_KIND.change_schema(WINDOWS))


def _window_seed(start: int, stop: int) -> pa.Table:
    numbers = np.arange(start, stop, dtype=np.int64)
    return _window_rows(numbers, numbers % 50 + 1, np.zeros(len(numbers), dtype=bool))


def _window_batch(rng: np.random.Generator, rows: int, n: int, expected: Expected) -> pa.Table:
    numbers = _keys(rng, rows, n)
    counts = rng.integers(1, 1000, size=n)
    deletes = rng.random(n) < 0.1
    customers, starts = _window_key(numbers)
    for customer, start, count, gone in zip(
        customers.to_pylist(), starts.tolist(), counts.tolist(), deletes.tolist(), strict=True
    ):
        expected[(customer, start)] = None if gone else (count,)
    return _window_rows(numbers, counts, deletes)


# -- change_rows: ChangeRows with one key column (transactions_enriched) ----------------------

ENRICHED = pa.schema(
    [
        ("txn_id", pa.string()),
        ("customer_id", pa.string()),
        ("amount", DECIMAL),
        ("ts", pa.int64()),
        ("customer_country", pa.string()),
        ("suspicious", pa.bool_()),
    ]
)
ENRICHED_KIND = ChangeRows("txn_id")


def _enriched_rows(numbers: np.ndarray, ts: np.ndarray, deletes: np.ndarray) -> pa.Table:
    rows = {
        "txn_id": pc.binary_join_element_wise("t", pc.cast(pa.array(numbers), pa.string()), ""),
        "customer_id": _ids(numbers % 100_000),
        "amount": _units(numbers % 10_000),
        "ts": ts,
        "customer_country": pc.take(pa.array(["DE", "FR", None]), pa.array(numbers % 3)),
        "suspicious": (numbers % 7) == 0,
        "_delete": deletes,
    }
    return pa.table(rows, schema=ENRICHED_KIND.change_schema(ENRICHED))


def _enriched_seed(start: int, stop: int) -> pa.Table:
    numbers = np.arange(start, stop, dtype=np.int64)
    return _enriched_rows(numbers, numbers, np.zeros(len(numbers), dtype=bool))


def _enriched_batch(rng: np.random.Generator, rows: int, n: int, expected: Expected) -> pa.Table:
    numbers = _keys(rng, rows, n)
    ts = rng.integers(10**12, 2 * 10**12, size=n)
    deletes = rng.random(n) < 0.05
    batch = _enriched_rows(numbers, ts, deletes)
    for key, when, gone in zip(
        batch["txn_id"].to_pylist(), ts.tolist(), deletes.tolist(), strict=True
    ):
        expected[key] = None if gone else (when,)
    return batch


# -- accumulate: Accumulate summing into the stored rows (customer_spend) ---------------------

SPEND = pa.schema(
    [
        ("customer_id", pa.string()),
        ("txn_count", pa.int64()),
        ("total_amount", DECIMAL),
        ("last_txn_ts", pa.int64()),
    ]
)
SPEND_KIND = Accumulate(
    "customer_id",
    updates={
        "txn_count": "t.txn_count + s.txn_count",
        "total_amount": "t.total_amount + s.total_amount",
        "last_txn_ts": "greatest(t.last_txn_ts, s.last_txn_ts)",
    },
)


def _spend_seed(start: int, stop: int) -> pa.Table:
    ids = np.arange(start, stop, dtype=np.int64)
    rows = {
        "customer_id": _ids(ids),
        "txn_count": np.ones(len(ids), dtype=np.int64),
        "total_amount": _units(ids % 10_000),
        "last_txn_ts": ids,
    }
    return pa.table(rows, schema=SPEND)


def _spend_batch(rng: np.random.Generator, rows: int, n: int, expected: Expected) -> pa.Table:
    numbers = _keys(rng, rows, n)
    counts = rng.integers(1, 20, size=n)
    cents = rng.integers(1, 100_000, size=n)
    ts = rng.integers(0, 2 * rows, size=n)
    keys = _ids(numbers)
    for key, number, count, cent, when in zip(
        keys.to_pylist(),
        numbers.tolist(),
        counts.tolist(),
        cents.tolist(),
        ts.tolist(),
        strict=True,
    ):
        old = expected.get(key)
        if old is None:  # from the seeded row, or new
            old = (1, Decimal(number % 10_000), number) if number < rows else (0, Decimal(0), 0)
        total = old[1] + Decimal(cent).scaleb(-2)
        expected[key] = (old[0] + count, total, max(old[2], when))
    total = pa.array([Decimal(c).scaleb(-2) for c in cents.tolist()], DECIMAL)
    data = {"customer_id": keys, "txn_count": counts, "total_amount": total, "last_txn_ts": ts}
    return pa.table(data, schema=SPEND)


CASES = {
    "upsert": Case(
        "upsert", UPSERT, UPSERT_KIND, _upsert_seed, _upsert_batch, ("email", "updated_at")
    ),
    "composite": Case(
        "composite", WINDOWS, WINDOW_KIND, _window_seed, _window_batch, ("txn_count",)
    ),
    "change_rows": Case(
        "change_rows", ENRICHED, ENRICHED_KIND, _enriched_seed, _enriched_batch, ("ts",)
    ),
    "accumulate": Case(
        "accumulate",
        SPEND,
        SPEND_KIND,
        _spend_seed,
        _spend_batch,
        ("txn_count", "total_amount", "last_txn_ts"),
    ),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.sink_bench", description=__doc__.split("\n")[0]
    )
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    p.add_argument("--kinds", nargs="+", choices=list(CASES), default=list(CASES))
    p.add_argument("--batch-keys", type=int, default=5_000)
    p.add_argument("--batches", type=int, default=20, help="measured sink batches per size")
    p.add_argument(
        "--merge-batches", type=int, default=4, help="measured merge batches (upsert table)"
    )
    p.add_argument("--dir", type=Path, default=None, help="where tables go (a temp dir)")
    # Internal: one kind at one size, in a fresh process, so its memory is its own.
    p.add_argument("--one", nargs=2, metavar=("KIND", "ROWS"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure_apart(name: str, rows: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """:func:`measure` in a fresh process (seeding in another one before it)."""
    common = ["--batch-keys", str(args.batch_keys), "--batches", str(args.batches)]
    common += ["--merge-batches", str(args.merge_batches), "--dir", str(root)]
    command = [sys.executable, "-m", "bench.sink_bench", "--one", name, str(rows), *common]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        msg = f"{name} at {rows:,} rows failed:\n{done.stderr[-3000:]}"
        raise RuntimeError(msg)
    return json.loads(done.stdout.strip().splitlines()[-1])


def seed(case: Case, path: Path, rows: int) -> None:
    """The table holding ``rows`` keys: one share per file, committed as batch 0."""
    table = CompactedTable(path, case.schema, case.kind, "bench")
    with table.batch():
        version = table.version()
        shares = [
            table.share_writer().write(case.seed(i, min(i + FILE_ROWS, rows)), 0, version)
            for i in range(0, rows, FILE_ROWS)
        ]
    table.commit_shares(pa.concat_tables(shares), 0, {}, "bench")
    table.close()
    stored_rows._CACHES.clear()  # the measured process starts without the seeding's cache


def measure(case: Case, root: Path, rows: int, args: argparse.Namespace) -> dict[str, Any]:
    path = root / f"{case.name}-{rows}"
    started = time.perf_counter()
    seeding = [
        sys.executable,
        "-c",
        f"from bench.sink_bench import seed, CASES; from pathlib "
        f"import Path; seed(CASES[{case.name!r}], Path({str(path)!r}), {rows})",
    ]
    subprocess.run(seeding, check=True)
    out: dict[str, Any] = {"kind": case.name, "rows": rows, "seed_s": time.perf_counter() - started}
    before = rss_mb()
    out["start_mb"] = before
    started = time.perf_counter()
    sink = CompactedTable(path, case.schema, case.kind, "bench")
    sink.committed_batch()  # opens the table: replays the log, rebuilds the key index
    out["open_s"] = time.perf_counter() - started
    rng, expected = np.random.default_rng(rows), {}
    _OFFSETS.next = None
    times = []
    for batch_id in range(1, args.batches + 3):
        batch = case.batch(rng, rows, args.batch_keys, expected)
        started = time.perf_counter()
        sink.apply(batch, batch_id, {"t": {"0": batch_id}}, "bench")
        if batch_id > 2:  # the first two warm caches up
            times.append(time.perf_counter() - started)
    sink.close()
    out["memory_mb"] = rss_mb() - before
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["median_s"], out["p90_s"] = statistics.median(times), _p90(times)
    out["wrong_keys"] = check(case, path, expected)
    if args.merge_batches and case.name == "upsert":
        out["merge_median_s"], out["merge_p90_s"] = measure_merge(root, rows, args)
    stored_rows._CACHES.clear()
    shutil.rmtree(path)
    return out


def measure_merge(root: Path, rows: int, args: argparse.Namespace) -> tuple[float, float]:
    """The delta-rs merge path on the same upsert table (the baseline)."""
    path = root / f"merge-{rows}"
    for i in range(0, rows, FILE_ROWS):
        seeded = _upsert_seed(i, min(i + FILE_ROWS, rows)).select(UPSERT.names)
        write_deltalake(str(path), seeded, mode="append")
    merge = MergeTable(TableLocation.of(path), UPSERT, UPSERT_KIND, "bench")
    rng, times = np.random.default_rng(rows + 1), []
    _OFFSETS.next = None
    for batch_id in range(1, args.merge_batches + 2):
        batch = UPSERT_KIND.reduce(_upsert_batch(rng, rows, args.batch_keys, {}))
        started = time.perf_counter()
        merge.apply(batch, batch_id, {})
        if batch_id > 1:
            times.append(time.perf_counter() - started)
    shutil.rmtree(path)
    return statistics.median(times), _p90(times)


def check(case: Case, path: Path, expected: Expected) -> int:
    """How many changed keys the table (read with deletion vectors applied) gets wrong."""
    keys = case.kind.keys
    table = read_arrow(path, columns=[*keys, *case.checked])
    first = pa.array(sorted({k[0] if isinstance(k, tuple) else k for k in expected}))
    picked = table.filter(pc.is_in(table[keys[0]], first))
    got: dict[Any, tuple] = {}
    duplicates = 0
    for row in picked.to_pylist():
        key = tuple(row[k] for k in keys) if len(keys) > 1 else row[keys[0]]
        duplicates += key in got
        got[key] = tuple(row[c] for c in case.checked)
    wrong = sum(1 for key, value in expected.items() if got.get(key) != value)
    return wrong + duplicates


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.one:
        name, rows = args.one
        print(json.dumps(measure(CASES[name], args.dir, int(rows), args)))
        return 0
    root = Path(tempfile.mkdtemp(prefix="kappa-sink-bench-", dir=args.dir))
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, cpus {os.cpu_count()}")
    print(
        "kind         rows        seed_s  open_s  memory_MB  peak_MB  median_s  p90_s   "
        "merge_med_s  merge_p90_s  wrong"
    )
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        for name in args.kinds:
            for rows in sorted(args.sizes):
                r = measure_apart(name, rows, args, root)
                results.setdefault(name, []).append(r)
                merge = (
                    f"{r['merge_median_s']:11.3f}  {r['merge_p90_s']:11.3f}"
                    if "merge_median_s" in r
                    else f"{'-':>11}  {'-':>11}"
                )
                print(
                    f"{name:<11}  {rows:<10d}  {r['seed_s']:6.1f}  {r['open_s']:6.2f}  "
                    f"{r['memory_mb']:9.0f}  {r['peak_mb']:7.0f}  "
                    f"{r['median_s']:8.3f}  {r['p90_s']:6.3f}  "
                    f"{merge}  {r['wrong_keys']:5d}",
                    flush=True,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    passed = True
    for name, sized in results.items():
        small, large = sized[0], sized[-1]
        ratio = large["median_s"] / small["median_s"]
        correct = all(r["wrong_keys"] == 0 for r in sized)
        within = ratio <= TARGET_RATIO
        passed &= correct and within
        line = (
            f"{name}: {large['rows']:,} vs {small['rows']:,} rows: {ratio:.2f}x "
            f"(target <= {TARGET_RATIO}x) {'ok' if within else 'OVER'}; "
            f"{'every changed key right' if correct else 'WRONG ROWS'}"
        )
        if "merge_median_s" in large:
            merge_ratio = large["merge_median_s"] / small["merge_median_s"]
            speedup = large["merge_median_s"] / large["median_s"]
            line += f"; merge baseline {merge_ratio:.2f}x, the sink {speedup:.1f}x faster"
        print(line)
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
