"""What a stateful deployment's state holds at its table's last commit, per key: the capacity
table's "state bytes per key".

    python -m bench.state_size --home <KAPPA_HOME> <pipeline> <version> [--keys N]

Loads every state partition at the version the table's last commit records (as a task would),
and prints per state table its rows, its Arrow bytes in memory and bytes per row; the store's
bytes on disk (snapshots and changelogs); and, with ``--keys`` (the distinct keys the log held),
the state's bytes per key in memory and on disk. Read-only.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from streaming.delta.table_reader import latest_commit
from streaming.deployment import Deployment
from streaming.deployment.record import state_partition_path
from streaming.state import StateStore


def measure(home: Path, pipeline: str, version: str, keys: int | None) -> dict[str, Any]:
    deployment = Deployment(pipeline, version, home)
    commit = latest_commit(deployment.table_path)
    if commit is None or not commit.state_versions:
        msg = f"{pipeline} {version} under {home} has no committed state (not a stateful plan?)"
        raise SystemExit(msg)
    tables: dict[str, dict[str, int]] = defaultdict(lambda: {"rows": 0, "bytes": 0})
    disk = 0
    for partition, batch in sorted(commit.state_versions.items()):
        where = state_partition_path(deployment.state_path, partition)
        disk += sum(f.stat().st_size for f in where.iterdir() if f.is_file())
        for name, table in StateStore(where).load(batch).items():
            tables[name]["rows"] += table.num_rows
            tables[name]["bytes"] += table.nbytes
    memory = sum(t["bytes"] for t in tables.values())
    out: dict[str, Any] = {
        "pipeline": pipeline,
        "batch": commit.batch_id,
        "partitions": len(commit.state_versions),
        "tables": {
            name: {**t, "bytes_per_row": t["bytes"] / t["rows"] if t["rows"] else None}
            for name, t in sorted(tables.items())
        },
        "memory_bytes": memory,
        "disk_bytes": disk,
    }
    if keys:
        out["keys"] = keys
        out["memory_bytes_per_key"] = memory / keys
        out["disk_bytes_per_key"] = disk / keys
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.state_size", description=__doc__.split("\n")[0]
    )
    p.add_argument("--home", type=Path, required=True, help="the platform home (KAPPA_HOME)")
    p.add_argument("pipeline")
    p.add_argument("version")
    p.add_argument("--keys", type=int, help="distinct keys in the log (for bytes per key)")
    args = p.parse_args(argv)
    print(json.dumps(measure(args.home, args.pipeline, args.version, args.keys), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
