"""delta-spark, Delta Lake's reference implementation, reads every kind of table the sink writes.

The sink writes its own log entries and deletion vectors (``streaming/delta``); the unit tests
read them back with delta-rs and polars, which share delta-rs' kernel. Here every table kind is
written as the platform writes it, with deletes, re-created keys, compaction (also with rows
deleted while it was prepared), checkpoints and cleanup, and one delta-spark JVM reads them all
(``tests.support.delta_reference``). Per table, delta-spark's rows must equal delta-rs' rows,
and both must equal a plain-Python reference of the batches written, so a table that both
readers get wrong fails too.
"""

from __future__ import annotations

import base64
import json
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from bench.support.settings import private_settings
from streaming.define.table_kinds import Accumulate, ChangeRows, LatestPerKey
from streaming.delta import file_compaction
from streaming.delta.cleanup import remove_unreferenced
from streaming.delta.commit_info import commit_info
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.dead_letters import SCHEMA as DEAD_LETTER_SCHEMA
from streaming.delta.dead_letters import DeadLetters
from streaming.delta.dv_table import DvTable
from streaming.delta.file_compaction import CompactionPolicy
from streaming.delta.maintenance import MaintenancePolicy
from streaming.delta.table_reader import read_arrow
from streaming.delta.table_store import TableLocation
from tests.support.delta_reference import read_tables

pytestmark = pytest.mark.integration

Row = dict[str, Any]

# A KTable of the source's records: the position columns hold each row's (partition, offset).
RECORDS = pa.schema(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("amount", pa.decimal128(18, 2)),
        ("score", pa.float64()),
        ("active", pa.bool_()),
        ("p", pa.int32()),
        ("o", pa.int64()),
    ]
)
POSITIONED = LatestPerKey("id", position=("p", "o"))
# An operator's output: full rows per key, at most one change per key and batch.
TOTALS = pa.schema(
    [("id", pa.string()), ("total", pa.decimal128(18, 2)), ("n", pa.int64()), ("ok", pa.bool_())]
)
WINDOWS = pa.schema(
    [
        ("customer_id", pa.string()),
        ("window_start", pa.int64()),
        ("window_end", pa.int64()),
        ("txn_count", pa.int64()),
        ("total_amount", pa.decimal128(18, 2)),
        ("max_amount", pa.float64()),
    ]
)
SPEND = pa.schema(
    [
        ("customer_id", pa.string()),
        ("txn_count", pa.int64()),
        ("total_amount", pa.decimal128(18, 2)),
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
# Small thresholds, so a few hundred rows are enough to compact.
SMALL = CompactionPolicy(max_deleted_fraction=0.1, small_file_rows=50, min_small_files=3)


@dataclass(frozen=True)
class Built:
    """A table as written, the rows it must hold, and the layouts it was built to show."""

    path: Path
    expected: list[Row]
    layouts: frozenset[str]


# -- the changes ------------------------------------------------------------------------------


class RecordLog:
    """Random keyed records over three partitions: upserts, deletes, keys changing partition."""

    def __init__(self, seed: int, keys: int) -> None:
        self.rng = random.Random(seed)
        self.keys = [f"k{i:03d}" for i in range(keys)]
        self.next_offset = [0, 0, 0]

    def batch(self, size: int, delete_share: float = 0.2) -> list[Row]:
        return [
            self.record(self.rng.choice(self.keys), self.rng.random() < delete_share)
            for _ in range(size)
        ]

    def record(self, key: str, delete: bool, partition: int | None = None) -> Row:
        p = self.rng.randrange(3) if partition is None else partition
        o = self.next_offset[p]
        self.next_offset[p] += 1
        return {
            "id": key,
            "name": None if o % 7 == 0 else f"{key} at {p}/{o}",
            "amount": Decimal(o * 37 % 100_000).scaleb(-2),
            "score": o / 8 - p,
            "active": o % 2 == 0,
            "p": p,
            "o": o,
            "_partition": p,
            "_offset": o,
            "_delete": delete,
        }


class KTable:
    """The expected table of :data:`POSITIONED`: per key the batch's change with the highest
    (partition, offset) wins; it replaces or deletes the stored row unless that row comes from
    a higher position. A deleted key keeps no position, so any later batch may bring it back."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}

    def apply(self, changes: list[Row]) -> None:
        winners: dict[str, Row] = {}
        for change in changes:
            known = winners.get(change["id"])
            if known is None or (change["p"], change["o"]) > (known["p"], known["o"]):
                winners[change["id"]] = change
        for key, change in winners.items():
            stored = self.rows.get(key)
            if stored is not None and (stored["p"], stored["o"]) >= (change["p"], change["o"]):
                continue
            if change["_delete"]:
                self.rows.pop(key, None)
            else:
                self.rows[key] = {name: change[name] for name in RECORDS.names}

    def expected(self) -> list[Row]:
        return list(self.rows.values())


def _arrow(rows: list[Row], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def _commit_in_shares(table: CompactedTable, changes: list[Row], batch_id: int) -> None:
    """One batch written as 1-4 shares, as Spark tasks write them, then committed."""
    shares = 1 + batch_id % 4
    with table.batch():
        written = [
            table.share_writer().write(
                _arrow(changes[i::shares], POSITIONED.change_schema(RECORDS)), batch_id
            )
            for i in range(shares)
        ]
    table.commit_shares(pa.concat_tables(written), batch_id, {"t": {"0": batch_id}}, "d")


def _maintained(**steps: Any) -> MaintenancePolicy:
    return MaintenancePolicy(compaction=SMALL, background=False, retention_s=0, **steps)


# -- the tables -------------------------------------------------------------------------------


def latest_per_key(path: Path) -> Built:
    """Upserts and deletes as shares, compaction, checkpoints and cleanup in the sink's order."""
    policy = _maintained(compact_every=4, checkpoint_every=5, cleanup_every=6)
    table = CompactedTable(path, RECORDS, POSITIONED, "app", policy)
    log, reference = RecordLog(seed=7, keys=200), KTable()
    for batch_id in range(14):
        changes = log.batch(300)
        _commit_in_shares(table, changes, batch_id)
        reference.apply(changes)
    assert table.maintenance is not None
    stats = table.maintenance.stats
    assert stats.compactions and stats.checkpoints and stats.removed_files, stats
    assert not stats.failures, stats.last_error
    return Built(path, reference.expected(), frozenset({"dv", "checkpoint", "compaction"}))


def late_deletes(path: Path) -> Built:
    """A compaction prepared while a batch replaced and deleted rows of the files it rewrites:
    those rows become the rewritten file's deletion vector ("late deletes")."""
    table = DvTable(TableLocation.of(path), RECORDS, POSITIONED, "app")
    log, reference = RecordLog(seed=11, keys=80), KTable()

    def commit(batch_id: int) -> None:
        changes = log.batch(120, delete_share=0.3)
        schema = POSITIONED.change_schema(RECORDS)
        table.apply(_arrow(changes, schema), batch_id, commit_info(batch_id, {}, "d", ""))
        reference.apply(changes)

    for batch_id in range(6):
        commit(batch_id)
    chosen = file_compaction.choose(table, SMALL)
    assert chosen, "nothing to compact: the table shows no late deletes"
    job = file_compaction.prepare(table, chosen)
    commit(6)
    file_compaction.finish(table, job)
    commit(7)
    assert remove_unreferenced(table, retention_s=0)
    return Built(path, reference.expected(), frozenset({"dv", "compaction", "late deletes"}))


def every_key_deleted_then_back(path: Path) -> Built:
    """Every row deleted (no live file left), an empty batch, then two keys re-created. One
    partition, so each delete comes after the row it deletes."""
    table = CompactedTable(path, RECORDS, POSITIONED, "app", _maintained())
    log, reference = RecordLog(seed=3, keys=30), KTable()
    batches = [
        [log.record(key, delete=False, partition=0) for key in log.keys],
        [log.record(key, delete=True, partition=0) for key in log.keys],
        [],
        [log.record(key, delete=False, partition=0) for key in log.keys[:2]],
    ]
    for batch_id, changes in enumerate(batches):
        _commit_in_shares(table, changes, batch_id)
        reference.apply(changes)
    return Built(path, reference.expected(), frozenset({"every file removed"}))


def background_maintenance(path: Path) -> Built:
    """The platform's default: upkeep in a worker thread beside the commits."""
    policy = MaintenancePolicy(
        compaction=SMALL, compact_every=2, checkpoint_every=3, cleanup_every=4, retention_s=0.5
    )
    table = CompactedTable(path, RECORDS, POSITIONED, "app", policy)
    log, reference = RecordLog(seed=17, keys=120), KTable()
    try:
        for batch_id in range(17):
            if batch_id == 16:
                # On a busy machine the worker may still be preparing the last compaction: the
                # batch after it is ready publishes it.
                assert table.maintenance is not None
                table.maintenance.drain(timeout_s=120)
            changes = log.batch(150)
            _commit_in_shares(table, changes, batch_id)
            reference.apply(changes)
    finally:
        table.close()
    assert table.maintenance is not None
    assert not table.maintenance.stats.failures, table.maintenance.stats.last_error
    assert table.maintenance.stats.compactions >= 1
    return Built(path, reference.expected(), frozenset({"dv", "checkpoint", "compaction"}))


def _keyed_changes(
    rng: random.Random, keys: list[Any], make: Callable[[Any, int], Row], batch_id: int
) -> list[Row]:
    """At most one change per key (an operator's output): a random third of the keys."""
    return [
        {**make(key, batch_id), "_delete": rng.random() < 0.25}
        for key in rng.sample(keys, len(keys) // 3)
    ]


def _upserts_and_deletes(
    table: CompactedTable,
    schema: pa.Schema,
    keys: list[Any],
    key_of: Callable[[Row], Any],
    make: Callable[[Any, int], Row],
    batches: int,
) -> list[Row]:
    """Full-row upserts and deletes through ``CompactedTable.apply``; returns the expected rows."""
    rng, stored = random.Random(5), {}
    change_schema = pa.schema([*schema, pa.field("_delete", pa.bool_())])
    for batch_id in range(batches):
        changes = _keyed_changes(rng, keys, make, batch_id)
        table.apply(_arrow(changes, change_schema), batch_id, {"t": {"0": batch_id}}, "d")
        for change in changes:
            if change.pop("_delete"):
                stored.pop(key_of(change), None)
            else:
                stored[key_of(change)] = change
    return list(stored.values())


def _total(key: str, batch_id: int) -> Row:
    n = int(key[1:]) * 31 + batch_id
    return {"id": key, "total": Decimal(n * 7).scaleb(-2), "n": n, "ok": n % 3 == 0}


def operator_output(path: Path) -> Built:
    """A table without stored positions (a stateful operator's output), with deletion vectors,
    compacted and cleaned up."""
    policy = _maintained(compact_every=5, checkpoint_every=4, cleanup_every=5)
    table = CompactedTable(path, TOTALS, LatestPerKey("id"), "app", policy)
    keys = [f"t{i:03d}" for i in range(90)]
    expected = _upserts_and_deletes(table, TOTALS, keys, lambda r: r["id"], _total, 12)
    assert table.maintenance is not None and table.maintenance.stats.compactions
    return Built(path, expected, frozenset({"dv", "checkpoint", "compaction"}))


def change_rows(path: Path) -> Built:
    """``ChangeRows`` with one key column: deletion vectors, compacted, checkpointed."""
    policy = _maintained(compact_every=3, checkpoint_every=4, cleanup_every=5)
    table = CompactedTable(path, TOTALS, ChangeRows("id"), "app", policy)
    keys = [f"c{i:03d}" for i in range(60)]
    expected = _upserts_and_deletes(table, TOTALS, keys, lambda r: r["id"], _total, 8)
    return Built(path, expected, frozenset({"dv", "checkpoint", "compaction"}))


def _window(key: tuple[str, int], batch_id: int) -> Row:
    customer, start = key
    n = start // 3_600_000 + batch_id + 1
    return {
        "customer_id": customer,
        "window_start": start,
        "window_end": start + 3_600_000,
        "txn_count": n,
        "total_amount": Decimal(n * 1234).scaleb(-2),
        "max_amount": n * 2.5,
    }


def composite_change_rows(path: Path) -> Built:
    """``ChangeRows`` keyed by (customer, window start), as a windowed plan writes it: deletion
    vectors, compacted, checkpointed."""
    policy = _maintained(compact_every=3, checkpoint_every=4, cleanup_every=5)
    kind = ChangeRows("customer_id", also=("window_start",))
    table = CompactedTable(path, WINDOWS, kind, "app", policy)
    keys = [(f"u{c}", h * 3_600_000) for c in range(10) for h in range(6)]
    expected = _upserts_and_deletes(
        table, WINDOWS, keys, lambda r: (r["customer_id"], r["window_start"]), _window, 8
    )
    return Built(path, expected, frozenset({"dv", "checkpoint", "compaction"}))


def accumulate(path: Path) -> Built:
    """``Accumulate``: each batch's per-key sums folded into the stored row read by key, written
    with deletion vectors, compacted and checkpointed."""
    policy = _maintained(compact_every=3, checkpoint_every=4, cleanup_every=5)
    table = CompactedTable(path, SPEND, SPEND_KIND, "app", policy)
    return Built(path, _fold_batches(table), frozenset({"dv", "checkpoint", "compaction"}))


def merged_accumulate(path: Path) -> Built:
    """An ``Accumulate`` whose updates are SQL beyond column arithmetic: delta-rs merges."""
    updates = {
        **SPEND_KIND.updates,
        "txn_count": "CASE WHEN TRUE THEN t.txn_count + s.txn_count END",
    }
    table = CompactedTable(path, SPEND, Accumulate(key="customer_id", updates=updates), "app")
    return Built(path, _fold_batches(table), frozenset({"merge"}))


def _fold_batches(table: CompactedTable) -> list[Row]:
    """Random per-key sums through ``CompactedTable.apply``; returns the expected rows."""
    rng, stored = random.Random(9), {}
    for batch_id in range(8):
        rows = []
        for key in rng.sample([f"s{i:02d}" for i in range(40)], 15):
            count = rng.randint(1, 5)
            amount = Decimal(rng.randint(1, 99_999)).scaleb(-2)
            rows.append((key, count, amount, rng.randint(0, 10**12)))
        batch = [dict(zip(SPEND.names, row, strict=True)) for row in rows]
        table.apply(_arrow(batch, SPEND), batch_id, {"t": {"0": batch_id}}, "d")
        for key, count, amount, ts in rows:
            old = stored.get(key)
            if old is not None:
                count, amount = count + old["txn_count"], amount + old["total_amount"]
                ts = max(ts, old["last_txn_ts"])
            stored[key] = dict(zip(SPEND.names, (key, count, amount, ts), strict=True))
    return list(stored.values())


def dead_letters(path: Path) -> Built:
    """The dead-letter table: binary keys and values (some not UTF-8), timestamps, a replay."""
    table, expected = DeadLetters(path, "app"), []
    start = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)
    for batch_id in range(3):
        records = [
            {
                "key": None if i == 0 else f"key-{batch_id}-{i}".encode(),
                "value": [None, b"\xff\xfe not utf-8", b'{"amount": "x"}'][i % 3],
                "topic": "transactions",
                "partition": i % 2,
                "offset": batch_id * 10 + i,
                "timestamp": start + timedelta(seconds=batch_id, microseconds=1234 * i),
                "error": ["no key", "invalid UTF-8", "malformed JSON"][i % 3],
            }
            for i in range(4)
        ]
        arrow = _arrow(records, pa.schema(list(DEAD_LETTER_SCHEMA)[:-1]))
        assert table.append(arrow, batch_id) == len(records)
        assert table.append(arrow, batch_id) == 0  # a replayed batch adds nothing
        expected += [{**r, "batch_id": batch_id} for r in records]
    return Built(path, expected, frozenset())


BUILDERS: dict[str, Callable[[Path], Built]] = {
    "latest_per_key": latest_per_key,
    "late_deletes": late_deletes,
    "every_key_deleted_then_back": every_key_deleted_then_back,
    "background_maintenance": background_maintenance,
    "operator_output": operator_output,
    "change_rows": change_rows,
    "composite_change_rows": composite_change_rows,
    "accumulate": accumulate,
    "merged_accumulate": merged_accumulate,
    "dead_letters": dead_letters,
}


# -- reading and comparing --------------------------------------------------------------------


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    root = tmp_path_factory.mktemp("tables")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def delta_spark(
    tables: dict[str, Built], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[Row]]:
    """Every table as delta-spark reads it: one JVM for the whole module."""
    settings = private_settings(tmp_path_factory.mktemp("home"))
    paths = [built.path for built in tables.values()]
    rows = read_tables(settings.cache_dir, paths, spark=settings.spark)
    return {name: rows[str(built.path)] for name, built in tables.items()}


def _canonical(value: Any, kind: pa.DataType) -> Any:
    """One value as JSON can hold it, the same from Arrow and from Spark's JSON."""
    if value is None:
        return None
    if pa.types.is_floating(kind):
        return float(value)
    if pa.types.is_decimal(kind):
        return format(Decimal(value).normalize(), "f")
    if pa.types.is_binary(kind):
        return value if isinstance(value, str) else base64.b64encode(value).decode()
    if pa.types.is_timestamp(kind):
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
        return moment.astimezone(UTC).isoformat()
    return value


def _normalised(rows: Iterable[Row], schema: pa.Schema) -> Counter[str]:
    """Rows as canonical JSON, counted: a key live twice is a difference too."""
    out: Counter[str] = Counter()
    for row in rows:
        assert sorted(row) == sorted(schema.names), f"columns {sorted(row)}"
        values = {f.name: _canonical(row[f.name], f.type) for f in schema}
        out[json.dumps(values, sort_keys=True)] += 1
    return out


def _difference(left: Counter[str], right: Counter[str]) -> str:
    only_left, only_right = sorted((left - right).elements()), sorted((right - left).elements())
    return (
        f"{len(only_left)} rows only on the left, e.g. {only_left[:3]}; "
        f"{len(only_right)} only on the right, e.g. {only_right[:3]}"
    )


@pytest.mark.parametrize("name", list(BUILDERS))
def test_delta_spark_reads_the_rows_delta_rs_reads(
    name: str, tables: dict[str, Built], delta_spark: dict[str, list[Row]]
) -> None:
    """delta-spark's rows equal delta-rs' (the product's reader), and both equal the rows the
    batches written must leave."""
    built = tables[name]
    arrow = read_arrow(built.path)
    by_delta_rs = _normalised(arrow.to_pylist(), arrow.schema)
    by_delta_spark = _normalised(delta_spark[name], arrow.schema)
    assert by_delta_spark == by_delta_rs, _difference(by_delta_spark, by_delta_rs)
    expected = _normalised(built.expected, arrow.schema)
    assert by_delta_rs == expected, _difference(by_delta_rs, expected)
    assert sum(expected.values()) > 0, "a table with no rows compares nothing"


def _log_entries(path: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """(operation, adds and removes) of each JSON log entry, oldest first."""
    out = []
    for entry in sorted((path / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in entry.read_text().splitlines() if line]
        operation = next(a["commitInfo"].get("operation") for a in actions if "commitInfo" in a)
        out.append((operation, [a for a in actions if "add" in a or "remove" in a]))
    return out


def _layouts(path: Path) -> set[str]:
    """What the snapshot the readers read is made of: files with deletion vectors, a file a
    compaction wrote (with rows deleted while it was prepared), files written by merges, a
    checkpoint; and whether the table once had no data file left."""
    found: set[str] = set()
    live: dict[str, dict[str, Any]] = {}  # path -> its add action
    origin: dict[str, str] = {}  # path -> the operation that wrote the file
    late: set[str] = set()  # files a compaction wrote with a DV of their own
    for operation, actions in _log_entries(path):
        for action in actions:
            if "remove" in action:
                live.pop(action["remove"]["path"], None)
                continue
            add = action["add"]
            live[add["path"]] = add
            origin.setdefault(add["path"], operation)
            if operation == "OPTIMIZE" and "deletionVector" in add:
                late.add(add["path"])
        if actions and not live:
            found.add("every file removed")
    for file, add in live.items():
        found |= {"dv"} if "deletionVector" in add else set()
        found |= {"compaction"} if origin[file] == "OPTIMIZE" else set()
        found |= {"late deletes"} if file in late else set()
        found |= {"merge"} if origin[file] == "MERGE" else set()
    if list((path / "_delta_log").glob("*.checkpoint.parquet")):
        found.add("checkpoint")
    return found


@pytest.mark.parametrize("name", list(BUILDERS))
def test_each_table_holds_the_layout_it_was_built_for(name: str, tables: dict[str, Built]) -> None:
    built = tables[name]
    assert built.layouts <= _layouts(built.path)
