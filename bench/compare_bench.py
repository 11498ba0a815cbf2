"""Benchmark the old-vs-new comparison on two 1,000,000-row versions of a customers table.

Both versions are written as Delta tables (delta-rs) into a temporary directory and read back
the way the platform reads snapshots (``streaming.delta.table_reader.read_spark``), in a session
with the platform's Spark settings (``platform/kappa.yaml``; ``--master`` replaces its master). The
candidate changes the email of 0.05% of the customers, drops 0.01% and adds 50; the
comparison runs under the default policy. The baseline in the same run is a plain ``count()``
of both sides.

Run::

    .venv/bin/python bench/compare_bench.py            # 1,000,000 rows, local[2]
    .venv/bin/python bench/compare_bench.py --rows 100000 --repeat 2
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from quality import ComparisonPolicy, compare_tables

TARGET_S = 30.0
COUNTRIES = ("DE", "FR", "GB", "US", "NL", "ES", "IT", "PL", "SE", "CH")


def customers(n: int, *, candidate: bool) -> pa.Table:
    """A deterministic customers table; the candidate carries the benchmark's changes."""
    ids = range(n + 50) if candidate else range(n)
    rows = [i for i in ids if not (candidate and i < n and i % 10_000 == 5)]
    emails = [
        f"changed{i}@example.org" if candidate and i % 2_000 == 0 else f"user{i}@example.com"
        for i in rows
    ]
    return pa.table(
        {
            "customer_id": pa.array([f"c{i:08d}" for i in rows], pa.string()),
            "name": pa.array([f"Customer {i}" for i in rows], pa.string()),
            "email": pa.array(emails, pa.string()),
            "country": pa.array([COUNTRIES[i % len(COUNTRIES)] for i in rows], pa.string()),
            "updated_at": pa.array([1_700_000_000_000 + i * 37 for i in rows], pa.int64()),
            "partition": pa.array([i % 4 for i in rows], pa.int32()),
            "offset": pa.array(rows, pa.int64()),
        }
    )


def write_versions(root: Path, n: int) -> tuple[str, str]:
    """Write old and new as Delta tables under ``root``; return their paths."""
    from deltalake import write_deltalake

    paths = []
    for name, candidate in (("customers__v1", False), ("customers__v2", True)):
        path = root / name
        write_deltalake(str(path), customers(n, candidate=candidate), target_file_size=16 << 20)
        paths.append(str(path))
    return paths[0], paths[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=1, help="comparisons to run and time")
    parser.add_argument("--report", action="store_true", help="print the comparison report")
    parser.add_argument("--phases", action="store_true", help="log the time of each phase")
    parser.add_argument("--docs", action="store_true", help="also build GE Data Docs")
    args = parser.parse_args(argv)
    if args.phases:
        logging.basicConfig(format="  %(message)s")
        logging.getLogger("quality.compare").setLevel(logging.DEBUG)

    from streaming.delta.table_reader import read_spark
    from streaming.settings import load_settings
    from streaming.spark.session import build_spark_session

    root = Path(tempfile.mkdtemp(prefix="kappa-compare-bench-"))
    try:
        started = time.perf_counter()
        old_path, new_path = write_versions(root, args.rows)
        elapsed = time.perf_counter() - started
        print(f"wrote 2 Delta tables of ~{args.rows:,} rows in {elapsed:.1f} s")
        # The platform's Spark settings, as a comparison run in Dagster gets them.
        settings = load_settings(overrides={"spark.master": args.master})
        spark = build_spark_session(settings, app_name="kappa-compare-bench")

        started = time.perf_counter()
        counts = (read_spark(spark, old_path).count(), read_spark(spark, new_path).count())
        baseline = time.perf_counter() - started
        print(f"baseline: count() of both sides = {counts} in {baseline:.2f} s")
        started = time.perf_counter()
        for path in (old_path, new_path):  # every column read once, nothing computed
            read_spark(spark, path).write.format("noop").mode("overwrite").save()
        full_scan = time.perf_counter() - started
        print(f"context:  full scan of both sides (noop write) in {full_scan:.2f} s")

        timings = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = compare_tables(
                read_spark(spark, old_path),
                read_spark(spark, new_path),
                "customer_id",
                ComparisonPolicy(),
                table="customers",
                old_name="v1",
                new_name="v2",
                docs_dir=root / "docs" if args.docs else None,
            )
            timings.append(time.perf_counter() - started)
        if args.report:
            print(result.render_text())
        cov = result.coverage
        email = result.column("email")
        print(
            f"verdict: {'PASSED' if result.passed else 'FAILED'}; keys in both {cov.in_both:,}, "
            f"only old {cov.only_old}, only new {cov.only_new}; email differs for "
            f"{email.mismatched} keys"
        )
        first = timings[0]
        print(
            f"compare: {first:.2f} s first run (runs: {', '.join(f'{t:.2f}' for t in timings)}); "
            f"baseline count() {baseline:.2f} s; ratio {first / baseline:.1f}x "
            f"(full scan ratio {first / full_scan:.1f}x); "
            f"target < {TARGET_S:.0f} s: {'OK' if first < TARGET_S else 'OVER'}"
        )
        return 0 if first < TARGET_S else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
