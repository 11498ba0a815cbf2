"""The benchmarks' commit watcher pairs every commit's offsets with its own table version."""

from pathlib import Path

import pyarrow as pa
from deltalake import CommitProperties, write_deltalake

from bench.processes import CommitWatcher
from streaming.delta.commit_info import commit_info
from streaming.wait import wait_until


def _commit(path: Path, batch: int | None, ends: dict[str, dict[str, int]] | None = None) -> None:
    metadata = {} if batch is None else commit_info(batch, ends or {}, "customers__v1", "fp")
    write_deltalake(
        str(path),
        pa.table({"k": [1]}),
        mode="append",
        commit_properties=CommitProperties(custom_metadata=metadata),
    )


def test_commits_landing_while_watched_keep_their_versions_and_offsets(tmp_path: Path) -> None:
    table = tmp_path / "customers"
    _commit(table, None)  # version 0: no batch, like a table's creation
    watcher = CommitWatcher(table, "customers", interval_s=0.005)
    watcher.start()
    try:
        for n in range(1, 31):  # written as fast as possible, beside the polls
            _commit(table, n, {"customers": {"0": 10 * n, "1": n}, "other": {"0": 7}})
        assert wait_until(lambda: len(watcher.commits) == 30, timeout_s=10)
    finally:
        seen = watcher.stop()
    assert [(c.version, c.end_offsets) for c in seen] == [
        (n, {0: 10 * n, 1: n}) for n in range(1, 31)
    ]
