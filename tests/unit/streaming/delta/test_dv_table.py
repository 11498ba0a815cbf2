"""The deletion-vector sink against a plain-Python reference, read back by independent readers.

Batches arrive as several shares (as Spark tasks write them), keys move between partitions,
are deleted and come back. After every commit the table must equal the reference for three
readers that share no code with the sink: the product's reader (delta-rs DataFusion), polars
and a fresh sink opened from the log alone (its key index rebuilt from the files).
"""

from __future__ import annotations

import json
import random
import threading

import polars as pl
import pyarrow as pa
import pytest

from streaming.define.table_kinds import LatestPerKey
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.file_compaction import CompactionPolicy
from streaming.delta.maintenance import MaintenancePolicy
from streaming.delta.table_reader import read_arrow
from streaming.errors import TableError

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.int64()), ("p", pa.int32()), ("o", pa.int64())])
KIND = LatestPerKey("id", position=("p", "o"))
SMALL = CompactionPolicy(max_deleted_fraction=0.1, small_file_rows=50, min_small_files=3)


def _manual(**kwargs) -> MaintenancePolicy:
    """Maintenance only when a test asks for it, in the test's thread."""
    settings = {"compact_every": 10**9, "checkpoint_every": 10**9, "cleanup_every": 10**9}
    return MaintenancePolicy(compaction=SMALL, background=False, **(settings | kwargs))


class Reference:
    """The expected table, batch by batch: per key the batch's change with the highest
    (partition, offset) wins; it replaces or deletes the stored row unless that row comes from a
    higher position. A deleted key keeps no position, so any later batch may bring it back."""

    def __init__(self) -> None:
        self.stored: dict[str, tuple[int, int, int]] = {}  # id -> (p, o, v)

    def apply(self, changes: list[tuple[str, int, int, int | None]]) -> None:
        winners: dict[str, tuple[int, int, int | None]] = {}
        for key, p, o, v in changes:
            if key not in winners or (p, o) > winners[key][:2]:
                winners[key] = (p, o, v)
        for key, (p, o, v) in winners.items():
            known = self.stored.get(key)
            if known is not None and known[:2] >= (p, o):
                continue
            if v is None:
                self.stored.pop(key, None)
            else:
                self.stored[key] = (p, o, v)

    def rows(self) -> dict[str, tuple[int, int, int]]:
        return {k: (v, p, o) for k, (p, o, v) in self.stored.items()}


class Log:
    """A random keyed log over a few partitions: upserts, deletes, keys changing partition."""

    def __init__(self, seed: int, keys: int) -> None:
        self.rng = random.Random(seed)
        self.keys = [f"k{i:04d}" for i in range(keys)]
        self.next_offset = [0, 0, 0]

    def batch(self, size: int) -> list[tuple[str, int, int, int | None]]:
        out = []
        for _ in range(size):
            p = self.rng.randrange(3)
            o = self.next_offset[p]
            self.next_offset[p] += 1
            deleting = self.rng.random() < 0.2
            out.append((self.rng.choice(self.keys), p, o, None if deleting else o * 10 + p))
        return out


def _arrow(changes: list[tuple[str, int, int, int | None]]) -> pa.Table:
    rows = [
        {"id": k, "v": v, "p": p, "o": o, "_partition": p, "_offset": o, "_delete": v is None}
        for k, p, o, v in changes
    ]
    return pa.Table.from_pylist(rows, schema=KIND.change_schema(SCHEMA))


def _apply_in_shares(table: CompactedTable, changes, batch_id: int, shares: int) -> None:
    """Write the batch as ``shares`` separate shares (one per task), then commit them."""
    cut = [changes[i::shares] for i in range(shares)]
    with table.batch():
        written = [table.share_writer().write(_arrow(part), batch_id) for part in cut]
    table.commit_shares(pa.concat_tables(written), batch_id, {"t": {"0": batch_id}}, "d")


def _as_rows(arrow: pa.Table) -> dict[str, tuple[int, int, int]]:
    rows = arrow.to_pylist()
    assert len(rows) == len({r["id"] for r in rows}), "a key has two live rows"
    return {r["id"]: (r["v"], r["p"], r["o"]) for r in rows}


def _every_reader(table: CompactedTable, version: int | None = None) -> dict[str, dict]:
    where = str(table.location)
    out = {
        "delta-rs": _as_rows(read_arrow(where, version)),
        "polars": _as_rows(pl.read_delta(where, version=version).to_arrow()),
    }
    if version is None:
        reopened = CompactedTable(where, SCHEMA, KIND, "other-app", _manual())
        assert reopened._dv is not None
        reopened._dv.open()
        index = reopened._dv.index.locations
        out["rebuilt index"] = {k: out["delta-rs"][k] for k in index if k in out["delta-rs"]}
        assert set(index) == set(out["delta-rs"]), "the rebuilt index names other keys"
    return out


def _uses_deletion_vectors(table: CompactedTable) -> bool:
    log = table.location.local_path / "_delta_log"
    text = "".join(p.read_text() for p in log.glob("*.json"))
    return any("deletionVector" in json.loads(line).get("add", {}) for line in text.splitlines())


def test_every_commit_equals_the_reference_for_every_reader(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", _manual())
    log, reference = Log(seed=7, keys=300), Reference()
    for batch_id in range(12):
        changes = log.batch(400)
        _apply_in_shares(table, changes, batch_id, shares=1 + batch_id % 4)
        reference.apply(changes)
        for reader, rows in _every_reader(table).items():
            assert rows == reference.rows(), f"{reader} after batch {batch_id}"
    assert _uses_deletion_vectors(table)
    assert table.committed_batch() == 11


def test_time_travel_reads_each_commit_as_it_was(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", _manual())
    log, reference = Log(seed=3, keys=100), Reference()
    expected = {}
    for batch_id in range(6):
        changes = log.batch(150)
        _apply_in_shares(table, changes, batch_id, shares=2)
        reference.apply(changes)
        expected[table.version()] = reference.rows()
    for version, rows in expected.items():
        for reader, got in _every_reader(table, version).items():
            assert got == rows, f"{reader} at version {version}"


def test_a_reopened_sink_continues_where_the_log_ends(tmp_path):
    log, reference = Log(seed=11, keys=200), Reference()
    for batch_id in range(8):
        # a new process per batch: the index is rebuilt from the table each time
        table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", _manual())
        changes = log.batch(250)
        _apply_in_shares(table, changes, batch_id, shares=3)
        reference.apply(changes)
    assert _every_reader(table)["delta-rs"] == reference.rows()


def test_a_batch_that_died_before_its_commit_is_redone_once_and_its_files_cleaned(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", _manual(retention_s=0))
    log, reference = Log(seed=5, keys=100), Reference()
    first = log.batch(200)
    _apply_in_shares(table, first, 0, shares=2)
    reference.apply(first)
    second = log.batch(200)
    with table.batch():  # the tasks wrote their files, then the driver died
        orphan = table.share_writer().write(_arrow(second), 1)["path"][0].as_py()
    restarted = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", _manual(retention_s=0))
    assert restarted.committed_batch() == 0
    _apply_in_shares(restarted, second, 1, shares=2)
    _apply_in_shares(restarted, second, 1, shares=2)  # Spark re-runs the batch: skipped
    reference.apply(second)
    assert _every_reader(restarted)["delta-rs"] == reference.rows()
    assert restarted.maintenance is not None
    removed = restarted.maintenance.cleanup_now()
    assert orphan in removed
    for reader, rows in _every_reader(restarted).items():
        assert rows == reference.rows(), reader


def test_compaction_and_cleanup_keep_every_reader_on_the_reference(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", _manual(retention_s=0))
    log, reference = Log(seed=13, keys=150), Reference()
    for batch_id in range(10):
        changes = log.batch(200)
        _apply_in_shares(table, changes, batch_id, shares=2)
        reference.apply(changes)
    assert table.maintenance is not None
    files_before = len(table._dv.snapshot.files)
    table.maintenance.compact_now()
    assert table.maintenance.stats.compactions == 1
    assert len(table._dv.snapshot.files) < files_before
    removed = table.maintenance.cleanup_now()
    assert removed, "compaction replaced files, cleanup should remove them"
    for reader, rows in _every_reader(table).items():
        assert rows == reference.rows(), reader
    assert table.row_count() == len(reference.rows())
    more = log.batch(200)
    _apply_in_shares(table, more, 10, shares=2)
    reference.apply(more)
    for reader, rows in _every_reader(table).items():
        assert rows == reference.rows(), reader
    assert table.row_count() == len(reference.rows())


@pytest.mark.timeout(300)
def test_readers_never_see_a_half_state_while_maintenance_runs_beside_commits(tmp_path):
    policy = MaintenancePolicy(
        compaction=SMALL, compact_every=2, checkpoint_every=3, cleanup_every=4, retention_s=0.5
    )
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", policy)
    log, reference = Log(seed=17, keys=120), Reference()
    expected: dict[int, dict] = {}  # batch id -> reference after it
    stop = threading.Event()
    problems: list[str] = []
    reads = [0]

    def read_forever() -> None:
        where = str(table.location)
        while not stop.is_set():
            try:
                version, batch = _newest_commit(where)
                got = read_arrow(where, version)
            except Exception as exc:  # a file removed under a reader is a failure too
                problems.append(f"{type(exc).__name__}: {exc}")
                return
            if batch is not None and _as_rows(got) != expected[batch]:
                problems.append(f"read after batch {batch} differs from the reference")
                return
            reads[0] += 1

    reader = threading.Thread(target=read_forever)
    try:
        for batch_id in range(3):
            changes = log.batch(150)
            reference.apply(changes)
            expected[batch_id] = reference.rows()
            _apply_in_shares(table, changes, batch_id, shares=2)
        reader.start()
        for batch_id in range(3, 30):
            changes = log.batch(150)
            reference.apply(changes)
            expected[batch_id] = reference.rows()
            _apply_in_shares(table, changes, batch_id, shares=2)
    finally:
        stop.set()
        reader.join(timeout=60)
        table.close()
    assert not problems, problems
    assert reads[0] > 0
    stats = table.maintenance.stats
    assert stats.compactions > 0 and stats.checkpoints > 0 and stats.failures == 0
    assert _every_reader(table)["polars"] == reference.rows()


def _newest_commit(where: str) -> tuple[int, int | None]:
    """The newest version and the batch id it holds, from one snapshot."""
    from deltalake import DeltaTable

    snapshot = DeltaTable(where)
    return snapshot.version(), snapshot.transaction_version("app")


def test_operator_output_without_positions_replaces_and_deletes_rows(tmp_path):
    kind = LatestPerKey("id")
    table = CompactedTable(tmp_path / "t", SCHEMA, kind, "app", _manual())

    def changes(rows):  # (id, v, delete): full rows plus _delete, nothing else
        data = [{"id": i, "v": v, "p": 0, "o": 0, "_delete": d} for i, v, d in rows]
        fields = [*SCHEMA, pa.field("_delete", pa.bool_())]
        return pa.Table.from_pylist(data, schema=pa.schema(fields))

    table.apply(changes([("a", 1, False), ("b", 1, False), ("c", 1, False)]), 0, {}, "d")
    table.apply(changes([("a", 2, False), ("b", None, True), ("d", 1, False)]), 1, {}, "d")
    got = {k: v[0] for k, v in _as_rows(read_arrow(str(table.location))).items()}
    assert got == {"a": 2, "c": 1, "d": 1}
    polars = pl.read_delta(str(table.location)).to_arrow()
    assert {k: v[0] for k, v in _as_rows(polars).items()} == got
    with pytest.raises(TableError, match=r"at most one change per key \(id\)"):
        table.apply(changes([("a", 3, False), ("a", 4, False)]), 2, {}, "d")
    assert table.committed_batch() == 1


def test_changes_without_positions_are_refused_by_a_table_that_keeps_them(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", _manual())
    rows = pa.Table.from_pylist(
        [{"id": "a", "v": 1, "p": 0, "o": 0, "_delete": False}],
        schema=pa.schema([*SCHEMA, pa.field("_delete", pa.bool_())]),
    )
    with pytest.raises(TableError, match="needs each change's _partition and _offset"):
        table.apply(rows, 0, {}, "d")


def test_the_row_count_is_the_live_rows(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", _manual())
    log, reference = Log(seed=19, keys=80), Reference()
    for batch_id in range(5):
        changes = log.batch(120)
        _apply_in_shares(table, changes, batch_id, shares=2)
        reference.apply(changes)
        assert table.row_count() == len(reference.rows())


def test_the_row_count_is_read_while_a_batch_holds_the_table(tmp_path):
    """Progress reports count rows while a slow or stuck batch holds the table: they get the
    last commit's count instead of waiting for the batch."""
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", _manual())
    log, reference = Log(seed=23, keys=80), Reference()
    changes = log.batch(120)
    _apply_in_shares(table, changes, 0, shares=2)
    reference.apply(changes)
    holding, release = threading.Event(), threading.Event()

    def stuck_batch() -> None:
        with table.batch():
            holding.set()
            release.wait(60)

    batch = threading.Thread(target=stuck_batch)
    batch.start()
    try:
        assert holding.wait(10)
        counted: list[int] = []
        report = threading.Thread(target=lambda: counted.append(table.row_count()), daemon=True)
        report.start()
        report.join(10)
        assert counted == [len(reference.rows())], "the count waited for the batch"
    finally:
        release.set()
        batch.join()
