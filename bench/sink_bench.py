"""Per-batch cost of the compacted-table sink against the table's size: ``make bench-sink``.

    make bench-sink                                   # 0.1, 1 and 10 M rows
    make bench-sink ARGS="--sizes 100000 1000000"

Per size, two tables hold the same rows: one written by the deletion-vector sink (what
upsert/delete tables use), one by the delta-rs merge path (the baseline, measured in the same
run on the same machine). Both then take the same batches of random changes (updates of stored
keys, new keys, deletes, 5,000 keys a batch), applied on the driver as ``CompactedTable.apply``
does. Prints per size the median and p90 batch time of each path, the sink's open time (its key
index is rebuilt from the table) and its memory, and the ratio of the largest size to the
smallest (target: at most 2x). The table read back at the end must equal a plain-Python
reference of every changed key. Exit code 0 only if it does and the target holds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import write_deltalake

from streaming.define.table_kinds import LatestPerKey
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.merge_table import MergeTable
from streaming.delta.table_reader import read_arrow
from streaming.delta.table_store import TableLocation

SCHEMA = pa.schema(
    [
        ("customer_id", pa.string()),
        ("email", pa.string()),
        ("country", pa.string()),
        ("updated_at", pa.int64()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
    ]
)
KIND = LatestPerKey("customer_id", position=("partition", "offset"))
FILE_ROWS = 1_000_000  # rows per file of the seeded table, as a rebuild writes them
PARTITIONS = 4
TARGET_RATIO = 2.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.sink_bench", description=__doc__.split("\n")[0]
    )
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    p.add_argument("--batch-keys", type=int, default=5_000)
    p.add_argument("--batches", type=int, default=20, help="measured sink batches per size")
    p.add_argument("--merge-batches", type=int, default=4, help="measured merge batches per size")
    p.add_argument("--dir", type=Path, default=None, help="where tables go (a temp dir)")
    return p.parse_args(argv)


def seed_rows(start: int, stop: int) -> pa.Table:
    """Rows for keys ``start..stop``, each at offset = its number in its partition."""
    ids = np.arange(start, stop, dtype=np.int64)
    text = pc.cast(pa.array(ids), pa.string())
    partitions = (ids % PARTITIONS).astype(np.int32)
    return pa.table(
        {
            "customer_id": pc.binary_join_element_wise("c", pc.utf8_lpad(text, 9, "0"), ""),
            "email": pc.binary_join_element_wise("user", text, "@example.com", ""),
            "country": pc.take(pa.array(["DE", "FR", "US", "JP"]), pa.array(partitions)),
            "updated_at": ids,
            "partition": partitions,
            "offset": ids // PARTITIONS,
        },
        schema=SCHEMA,
    )


class Changes:
    """Random batches over a table of ``rows`` keys, and the reference they imply."""

    def __init__(self, rows: int, batch_keys: int, seed: int) -> None:
        self.rows, self.batch_keys = rows, batch_keys
        self.rng = np.random.default_rng(seed)
        self.next_offset = (rows + PARTITIONS) // PARTITIONS + 1  # above every seeded offset
        self.expected: dict[str, tuple[str, int] | None] = {}  # key -> (email, updated_at)

    def batch(self) -> pa.Table:
        n = self.batch_keys
        numbers = self.rng.choice(self.rows + self.rows // 10, size=n, replace=False)
        deletes = self.rng.random(n) < 0.1
        keys = [f"c{k:09d}" for k in numbers.tolist()]
        offsets = np.arange(self.next_offset, self.next_offset + n, dtype=np.int64)
        self.next_offset += n
        partitions = (numbers % PARTITIONS).astype(np.int32)
        emails = [f"new{o}@example.com" for o in offsets.tolist()]
        for key, email, when, gone in zip(
            keys, emails, offsets.tolist(), deletes.tolist(), strict=True
        ):
            self.expected[key] = None if gone else (email, when)
        return pa.table(
            {
                "customer_id": keys,
                "email": pa.array(emails),
                "country": pa.array(["DE"] * n),
                "updated_at": offsets,
                "partition": partitions,
                "offset": offsets,
                "_partition": partitions,
                "_offset": offsets,
                "_delete": deletes,
            },
            schema=KIND.change_schema(SCHEMA),
        )


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return 0.0


def seed_dv(path: Path, rows: int) -> None:
    """The sink's table holding ``rows`` keys: one share per file, committed as batch 0."""
    table = CompactedTable(path, SCHEMA, KIND, "bench")
    with table.batch():
        shares = [
            table.share_writer().write(_as_changes(seed_rows(i, min(i + FILE_ROWS, rows))), 0)
            for i in range(0, rows, FILE_ROWS)
        ]
    table.commit_shares(pa.concat_tables(shares), 0, {}, "bench")
    table.close()


def seed_merge(path: Path, rows: int) -> None:
    for i in range(0, rows, FILE_ROWS):
        write_deltalake(str(path), seed_rows(i, min(i + FILE_ROWS, rows)), mode="append")


def _as_changes(rows: pa.Table) -> pa.Table:
    extra = {
        "_partition": rows["partition"],
        "_offset": rows["offset"],
        "_delete": pa.array(np.zeros(rows.num_rows, dtype=bool)),
    }
    for name, column in extra.items():
        rows = rows.append_column(name, column)
    return rows.cast(KIND.change_schema(SCHEMA))


def measure_size(root: Path, rows: int, args: argparse.Namespace) -> dict[str, Any]:
    dv_path, merge_path = root / f"dv-{rows}", root / f"merge-{rows}"
    started = time.perf_counter()
    seed_dv(dv_path, rows)
    seed_merge(merge_path, rows)
    out: dict[str, Any] = {"rows": rows, "seed_s": time.perf_counter() - started}

    before = rss_mb()
    started = time.perf_counter()
    sink = CompactedTable(dv_path, SCHEMA, KIND, "bench")
    sink.committed_batch()  # opens the table: replays the log, rebuilds the key index
    out["open_s"] = time.perf_counter() - started
    out["index_mb"] = rss_mb() - before
    changes = Changes(rows, args.batch_keys, seed=rows)
    times = []
    for batch_id in range(1, args.batches + 3):
        batch = changes.batch()
        started = time.perf_counter()
        sink.apply(batch, batch_id, {"t": {"0": batch_id}}, "bench")
        if batch_id > 2:  # the first two warm caches up
            times.append(time.perf_counter() - started)
    sink.close()
    out["dv_median_s"], out["dv_p90_s"] = statistics.median(times), _p90(times)
    out["wrong_keys"] = check(dv_path, changes.expected)

    merge = MergeTable(TableLocation.of(merge_path), SCHEMA, KIND, "bench")
    changes = Changes(rows, args.batch_keys, seed=rows + 1)
    times = []
    for batch_id in range(1, args.merge_batches + 2):
        batch = KIND.reduce(changes.batch())
        started = time.perf_counter()
        merge.apply(batch, batch_id, {})
        if batch_id > 1:
            times.append(time.perf_counter() - started)
    out["merge_median_s"], out["merge_p90_s"] = statistics.median(times), _p90(times)
    shutil.rmtree(dv_path), shutil.rmtree(merge_path)
    return out


def check(path: Path, expected: dict[str, tuple[str, int] | None]) -> int:
    """How many changed keys the table (read with deletion vectors applied) gets wrong."""
    rows = read_arrow(path, columns=["customer_id", "email", "updated_at"])
    picked = rows.filter(pc.is_in(rows["customer_id"], pa.array(list(expected))))
    got: dict[str, tuple[str, int]] = {}
    duplicates = 0
    for row in picked.to_pylist():
        duplicates += row["customer_id"] in got
        got[row["customer_id"]] = (row["email"], row["updated_at"])
    wrong = sum(1 for key, value in expected.items() if got.get(key) != value)
    return wrong + duplicates


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="kappa-sink-bench-", dir=args.dir))
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, cpus {os.cpu_count()}")
    header = (
        "rows        seed_s  open_s  index_MB  dv_med_s  dv_p90_s  merge_med_s  merge_p90_s  wrong"
    )
    print(header)
    results = []
    try:
        for rows in sorted(args.sizes):
            r = measure_size(root, rows, args)
            results.append(r)
            print(
                f"{rows:<10d}  {r['seed_s']:6.1f}  {r['open_s']:6.2f}  {r['index_mb']:8.0f}  "
                f"{r['dv_median_s']:8.3f}  {r['dv_p90_s']:8.3f}  {r['merge_median_s']:11.3f}  "
                f"{r['merge_p90_s']:11.3f}  {r['wrong_keys']:5d}",
                flush=True,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    small, large = results[0], results[-1]
    dv_ratio = large["dv_median_s"] / small["dv_median_s"]
    merge_ratio = large["merge_median_s"] / small["merge_median_s"]
    speedup = large["merge_median_s"] / large["dv_median_s"]
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(
        f"{large['rows']:,} vs {small['rows']:,} rows: sink {dv_ratio:.2f}x "
        f"(target <= {TARGET_RATIO}x), merge baseline {merge_ratio:.2f}x; "
        f"at {large['rows']:,} rows the sink is {speedup:.1f}x faster than the merge"
    )
    correct = all(r["wrong_keys"] == 0 for r in results)
    passed = correct and dv_ratio <= TARGET_RATIO
    print("PASS" if passed else ("FAIL: wrong rows" if not correct else "FAIL: ratio"))
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
