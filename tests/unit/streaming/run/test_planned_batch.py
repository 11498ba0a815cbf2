"""A stateful plan's micro-batch without Spark: raw Kafka-shaped Arrow records in, table changes
out, state in a real state store. A crash after the state write but before the table commit
replays the batch from the state before it, with the same result."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa

from pipelines.transactions_enriched import PIPELINE
from streaming.delta.table_reader import read_arrow
from streaming.deployment import Deployment
from streaming.run.planned_batch import PlannedBatch

T0 = 1_700_000_000_000


def _raw(rows: list[tuple[str, int, int, int, str, dict | None]]) -> pa.Table:
    """(topic, partition, offset, timestamp ms, key, value) -> the Kafka source's columns."""
    return pa.table(
        {
            "key": pa.array([r[4].encode() for r in rows], pa.binary()),
            "value": pa.array(
                [None if r[5] is None else json.dumps(r[5]).encode() for r in rows], pa.binary()
            ),
            "topic": pa.array([r[0] for r in rows], pa.string()),
            "partition": pa.array([r[1] for r in rows], pa.int32()),
            "offset": pa.array([r[2] for r in rows], pa.int64()),
            "timestamp": pa.array([r[3] * 1000 for r in rows], pa.timestamp("us", tz="UTC")),
        }
    )


def _customer(offset: int, t: int, country: str | None) -> tuple:
    value = None
    if country is not None:
        value = {"customer_id": "c1", "name": "Ada", "email": "a@x.io", "country": country}
        value["updated_at"] = t
    return ("customers", 0, offset, t, "c1", value)


def _txn(offset: int, t: int, txn_id: str, country: str = "DE") -> tuple:
    value = {"txn_id": txn_id, "customer_id": "c1", "amount": 12.5, "currency": "EUR"}
    value.update(country=country, ts=t)
    return ("transactions", 0, offset, t, "c1", value)


def _ends(customers: int, transactions: int) -> dict:
    return {"customers": {"0": customers}, "transactions": {"0": transactions}}


def test_join_as_of_event_time_late_and_bad_records(tmp_path: Path) -> None:
    planned = PlannedBatch(PIPELINE, Deployment(PIPELINE.name, "v1", tmp_path))
    first = _raw([_customer(0, T0, "DE"), _txn(0, T0 + 5_000, "t1"), _txn(1, T0 - 1, "t0")])
    out = planned.run(first, 0, _ends(1, 2), None)
    rows = {r["txn_id"]: r for r in out.changes.to_pylist()}
    assert rows["t1"]["customer_country"] == "DE" and rows["t1"]["suspicious"] is False
    assert rows["t1"]["amount"] == Decimal("12.50")
    assert rows["t0"]["customer_country"] is None and rows["t0"]["suspicious"] is True
    # A move to FR one second before t1, arriving later (within grace), re-enriches t1; a
    # transaction 20 minutes behind its partition's stream time is late; a bad value is dead.
    second = _raw(
        [
            _customer(1, T0 + 4_000, "FR"),
            _txn(2, T0 + 5_000 - 1_200_000, "t-late"),
            ("transactions", 0, 3, T0, "c1", {"txn_id": 5}),
        ]
    )
    out = planned.run(second, 1, _ends(2, 4), 0)
    rows = {r["txn_id"]: r for r in out.changes.to_pylist()}
    assert rows["t1"]["customer_country"] == "FR" and "t-late" not in rows
    assert rows.get("t0", {"customer_country": None})["customer_country"] is None
    assert rows["t1"]["suspicious"] is True
    errors = sorted(out.dead_letters.column("error").to_pylist())
    assert errors[0] == "late" and errors[1].startswith("value is not a JSON object")


def test_a_crash_between_state_write_and_table_commit_replays_the_batch(tmp_path: Path) -> None:
    deployment = Deployment(PIPELINE.name, "v1", tmp_path)
    first = _raw([_customer(0, T0, "DE"), _txn(0, T0 + 5_000, "t1")])
    second = _raw([_customer(1, T0 + 4_000, "FR"), _txn(1, T0 + 6_000, "t2")])
    planned = PlannedBatch(PIPELINE, deployment)
    planned.run(first, 0, _ends(1, 1), None)
    expected = planned.run(second, 1, _ends(2, 2), 0).changes
    # The process dies before batch 1's table commit: the table still says batch 0.
    again = PlannedBatch(PIPELINE, deployment).run(second, 1, _ends(2, 2), 0).changes
    assert again.sort_by("txn_id").equals(expected.sort_by("txn_id"))
    assert {r["txn_id"] for r in again.to_pylist()} == {"t1", "t2"}


def test_hourly_windows_merge_into_a_table_with_a_composite_key(tmp_path: Path) -> None:
    from pipelines.spend_hourly import PIPELINE as HOURLY
    from streaming.delta.compacted_table import CompactedTable
    from streaming.delta.table_reader import read_arrow

    deployment = Deployment(HOURLY.name, "v1", tmp_path)
    planned = PlannedBatch(HOURLY, deployment)
    table = CompactedTable(deployment.table_path, HOURLY.table_schema, HOURLY.table, "test")
    hour = 3_600_000
    batches = [
        _raw([_txn(0, T0, "a"), _txn(1, T0 + hour, "b")]),
        _raw([_txn(2, T0 + hour - 60_000, "c"), _txn(3, T0 + 2 * hour, "d")]),
    ]
    for batch_id, raw in enumerate(batches):
        ends = _ends(0, 2 * (batch_id + 1))
        out = planned.run(raw, batch_id, ends, batch_id - 1 if batch_id else None)
        table.apply(out.changes, batch_id, ends, deployment.id)
    rows = {
        (r["customer_id"], r["window_start"]): r
        for r in read_arrow(deployment.table_path).to_pylist()
    }
    start = T0 - T0 % hour
    assert sorted(rows) == [("c1", start), ("c1", start + hour), ("c1", start + 2 * hour)]
    assert [rows[k]["txn_count"] for k in sorted(rows)] == [1, 2, 1]
    assert rows[("c1", start + hour)]["total_amount"] == Decimal("25.00")


class _Collected:
    """What the writer needs of Spark's micro-batch DataFrame: its rows as Arrow."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def toArrow(self) -> pa.Table:
        return self.table


def test_the_writer_commits_each_batch_once_with_late_records_dead_lettered(
    tmp_path: Path,
) -> None:
    from streaming.delta.dead_letters import DeadLetters
    from streaming.delta.table_reader import read_arrow
    from streaming.run.micro_batch import BatchWriter

    deployment = Deployment(PIPELINE.name, "v1", tmp_path)
    batches = [
        ([_customer(0, T0, "DE"), _txn(0, T0 + 1_000, "t1")], _ends(1, 1)),
        ([_txn(1, T0 + 2_000_000, "t2", "FR"), _customer(1, T0 + 1_500, "FR")], _ends(2, 2)),
        ([_txn(2, T0 + 2_000, "t-late")], _ends(2, 3)),
    ]
    log = deployment.checkpoint_path / "offsets"
    log.mkdir(parents=True)
    for batch_id, (_, ends) in enumerate(batches):
        (log / str(batch_id)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(ends)}\n')
    writer = BatchWriter(PIPELINE, deployment)
    for batch_id, (rows, _) in enumerate(batches):
        writer(_Collected(_raw(rows)), batch_id)  # type: ignore[arg-type]
    writer(_Collected(_raw(batches[-1][0])), 2)  # a restarted query re-offers the last batch
    table = {r["txn_id"]: r for r in read_arrow(deployment.table_path).to_pylist()}
    assert sorted(table) == ["t1", "t2"]
    assert table["t1"]["customer_country"] == "DE"  # FR came at T0 + 1.5 s, after t1's time
    assert table["t2"]["customer_country"] == "FR" and table["t2"]["suspicious"] is False
    dead = DeadLetters(deployment.dead_letter_path, deployment.app_id).read().to_pylist()
    assert [(r["offset"], r["error"], r["batch_id"]) for r in dead] == [(2, "late", 2)]
    assert writer.results[-1].skipped


# The bound the README states for a running deployment's state directory: two snapshots and the
# changelogs of at most 100 batches (a snapshot every 100 batches at the latest).
MAX_SNAPSHOTS = 2
MAX_CHANGELOGS = 100


def test_the_state_directory_stays_bounded_over_many_batches(tmp_path: Path) -> None:
    from streaming.run.micro_batch import BatchWriter

    deployment = Deployment(PIPELINE.name, "v1", tmp_path)
    log = deployment.checkpoint_path / "offsets"
    log.mkdir(parents=True)
    writer = BatchWriter(PIPELINE, deployment)
    most: dict[str, int] = {"snapshot": 0, "changelog": 0}
    batches = 2 * MAX_CHANGELOGS + 10  # two snapshots and more, so garbage to collect
    for batch_id in range(batches):
        # Each batch changes the state: a customer moves, and one of its transactions arrives.
        country = ("DE", "FR", "NL")[batch_id % 3]
        rows = [_customer(batch_id, T0 + 10 * batch_id, country)]
        rows.append(_txn(batch_id, T0 + 10 * batch_id + 5, f"t{batch_id}", country))
        ends = _ends(batch_id + 1, batch_id + 1)
        (log / str(batch_id)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(ends)}\n')
        writer(_Collected(_raw(rows)), batch_id)  # type: ignore[arg-type]
        kinds = [p.name.split("-")[0] for p in deployment.state_path.iterdir()]
        for kind in most:
            most[kind] = max(most[kind], kinds.count(kind))
    writer.close()
    assert most["snapshot"] <= MAX_SNAPSHOTS and most["changelog"] <= MAX_CHANGELOGS, most

    # What is left is enough to go on: a restarted deployment loads the state of the last batch.
    again = BatchWriter(PIPELINE, deployment)
    ends = _ends(batches, batches + 1)
    (log / str(batches)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(ends)}\n')
    last = _txn(batches, T0 + 10 * batches, "t-after", "?")
    again(_Collected(_raw([last])), batches)  # type: ignore[arg-type]
    rows = {r["txn_id"]: r for r in read_arrow(deployment.table_path).to_pylist()}
    assert len(rows) == batches + 1
    # as of the customer's move in the batch before
    assert rows["t-after"]["customer_country"] == ("DE", "FR", "NL")[(batches - 1) % 3]
