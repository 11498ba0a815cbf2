"""A stateful plan's state partition as a Spark task runs it, without Spark: raw Kafka-shaped
Arrow records in, the task's result row out, the table's data file and the partition's state in a
real table and state store. A task rerun after its batch's commit failed starts from the state
the table records and gives the same rows."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.transactions_enriched import PIPELINE
from streaming.define.pipeline import Pipeline
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.data_files import share_schema
from streaming.delta.dead_letters import ENTRY_SCHEMA, DeadLetters
from streaming.delta.table_reader import read_arrow
from streaming.deployment import Deployment
from streaming.run.copartition import Partitioning, StatePartitions
from streaming.run.partition_task import DEAD_PREFIX, PartitionTask

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


class Tasks:
    """One deployment's plan run batch by batch as the executors' tasks run it, committed as the
    driver commits it (the shares and dead letters the tasks return, and the state versions)."""

    def __init__(self, pipeline: Pipeline, deployment: Deployment) -> None:
        assert pipeline.plan is not None
        self.pipeline, self.deployment = pipeline, deployment
        self.table = CompactedTable(
            deployment.table_path, pipeline.table_schema, pipeline.table, deployment.app_id
        )
        self.dead = DeadLetters(deployment.dead_letter_path, deployment.app_id)
        self.versions: dict[int, int] = {}

    def run(self, raw: pa.Table, batch_id: int, ends: dict, commit: bool = True) -> pa.Table:
        """Run one batch (one task per partition number, as ``coPartition`` packs them) and,
        with ``commit``, commit it; returns the tasks' result rows."""
        assert self.pipeline.plan is not None
        task = PartitionTask(
            plan=self.pipeline.plan,
            table_schema=self.pipeline.table_schema,
            state_root=str(self.deployment.state_path),
            versions=dict(self.versions),
            batch_id=batch_id,
            ends={t: {int(p): int(e) for p, e in parts.items()} for t, parts in ends.items()},
            whole=False,
            writer=self.table.share_writer(),
            dead=self.dead.files,
        )
        rows = [
            pa.Table.from_batches(
                list(task(iter(raw.filter(pc.equal(raw["partition"], p)).to_batches())))
            )
            for p in sorted(set(raw["partition"].to_pylist()))
        ]
        result = pa.concat_tables(rows)
        if commit:
            shares = result.select(share_schema(self.table.share_writer().key_type).names)
            dead = result.select([DEAD_PREFIX + n for n in ENTRY_SCHEMA.names])
            dead = dead.rename_columns(ENTRY_SCHEMA.names)
            dead = dead.filter(dead["path"].is_valid())
            self.dead.commit(dead, batch_id)
            versions = dict(self.versions)
            versions.update(dict.fromkeys(result["state_partition"].to_pylist(), batch_id))
            done = self.table.commit_shares(
                shares, batch_id, ends, self.deployment.id, state_versions=versions
            )
            assert not done.skipped
            self.versions = versions
        return result

    def rows(self, key: str) -> dict:
        return {r[key]: r for r in read_arrow(self.deployment.table_path).to_pylist()}


def test_join_as_of_event_time_late_and_bad_records(tmp_path: Path) -> None:
    deployment = Deployment(PIPELINE.name, "v1", tmp_path)
    tasks = Tasks(PIPELINE, deployment)
    first = _raw([_customer(0, T0, "DE"), _txn(0, T0 + 5_000, "t1"), _txn(1, T0 - 1, "t0")])
    tasks.run(first, 0, _ends(1, 2))
    rows = tasks.rows("txn_id")
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
    result = tasks.run(second, 1, _ends(2, 4))
    assert result["input_rows"].to_pylist() == [3]
    rows = tasks.rows("txn_id")
    assert rows["t1"]["customer_country"] == "FR" and "t-late" not in rows
    assert rows["t0"]["customer_country"] is None
    assert rows["t1"]["suspicious"] is True
    dead = tasks.dead.read().to_pylist()
    errors = sorted(r["error"] for r in dead)
    assert errors[0] == "late" and errors[1].startswith("value is not a JSON object")
    assert {r["batch_id"] for r in dead} == {1}


def test_a_task_rerun_after_a_failed_commit_starts_from_the_committed_state(
    tmp_path: Path,
) -> None:
    deployment = Deployment(PIPELINE.name, "v1", tmp_path)
    first = _raw([_customer(0, T0, "DE"), _txn(0, T0 + 5_000, "t1")])
    second = _raw([_customer(1, T0 + 4_000, "FR"), _txn(1, T0 + 6_000, "t2")])
    tasks = Tasks(PIPELINE, deployment)
    tasks.run(first, 0, _ends(1, 1))
    # Batch 1 runs (its state written) but its commit never happens; a new driver reruns it.
    tasks.run(second, 1, _ends(2, 2), commit=False)
    again = Tasks(PIPELINE, deployment)
    again.versions = {0: 0}  # what the table's last commit records
    again.run(second, 1, _ends(2, 2))
    rows = again.rows("txn_id")
    assert sorted(rows) == ["t1", "t2"]
    assert rows["t1"]["customer_country"] == "FR" and rows["t2"]["customer_country"] == "FR"


def test_partitions_keep_their_own_state_and_stream_time(tmp_path: Path) -> None:
    """Partition 1 far ahead in event time does not make partition 0's records late."""
    deployment = Deployment(PIPELINE.name, "v1", tmp_path)
    tasks = Tasks(PIPELINE, deployment)
    p1 = {"txn_id": "x", "customer_id": "c2", "amount": 1, "currency": "EUR", "country": "DE"}
    raw = _raw(
        [
            _customer(0, T0, "DE"),
            ("transactions", 1, 0, T0 + 10_000_000, "c2", {**p1, "ts": T0 + 10_000_000}),
            _txn(0, T0 + 1_000, "t1"),
        ]
    )
    ends = {"customers": {"0": 1, "1": 0}, "transactions": {"0": 1, "1": 1}}
    result = tasks.run(raw, 0, ends)
    assert sorted(result["state_partition"].to_pylist()) == [0, 1]
    rows = tasks.rows("txn_id")
    assert sorted(rows) == ["t1", "x"] and rows["t1"]["customer_country"] == "DE"
    assert rows["x"]["customer_country"] is None
    parts = sorted(p.name for p in deployment.state_path.iterdir())
    assert parts == ["partition-0000", "partition-0001"]


def test_hourly_windows_into_a_table_with_a_composite_key(tmp_path: Path) -> None:
    from pipelines.spend_hourly import PIPELINE as HOURLY

    deployment = Deployment(HOURLY.name, "v1", tmp_path)
    tasks = Tasks(HOURLY, deployment)
    hour = 3_600_000
    batches = [
        _raw([_txn(0, T0, "a"), _txn(1, T0 + hour, "b")]),
        _raw([_txn(2, T0 + hour - 60_000, "c"), _txn(3, T0 + 2 * hour, "d")]),
    ]
    for batch_id, raw in enumerate(batches):
        tasks.run(raw, batch_id, {"transactions": {"0": 2 * (batch_id + 1)}})
    rows = {
        (r["customer_id"], r["window_start"]): r
        for r in read_arrow(deployment.table_path).to_pylist()
    }
    start = T0 - T0 % hour
    assert sorted(rows) == [("c1", start), ("c1", start + hour), ("c1", start + 2 * hour)]
    assert [rows[k]["txn_count"] for k in sorted(rows)] == [1, 2, 1]
    assert rows[("c1", start + hour)]["total_amount"] == Decimal("25.00")


def _trade(partition: int, offset: int, t: int, ticker: str) -> tuple:
    value = {"trade_id": f"{ticker}{offset}", "ticker": ticker, "price": 10.5, "size": 3, "ts": t}
    return ("trades", partition, offset, t, ticker, value)


def test_a_final_window_closes_by_its_own_partitions_stream_time(tmp_path: Path) -> None:
    """Partition 0 passing a minute's end plus the grace closes its ticker's minute, however far
    behind partition 1 is; partition 1's own minute stays open."""
    from pipelines.stock_stats_final import PIPELINE as FINAL

    deployment = Deployment(FINAL.name, "v1", tmp_path)
    tasks = Tasks(FINAL, deployment)
    minute, grace = 60_000, 600_000
    start = T0 - T0 % minute
    first = _raw([_trade(0, 0, start, "A"), _trade(1, 0, start, "B")])
    tasks.run(first, 0, {"trades": {"0": 1, "1": 1}})
    assert tasks.rows("ticker") == {}
    later = _raw([_trade(0, 1, start + minute + grace, "A")])
    tasks.run(later, 1, {"trades": {"0": 2, "1": 1}})
    rows = tasks.rows("ticker")
    assert sorted(rows) == ["A"] and rows["A"]["window_start"] == start
    assert rows["A"]["trade_count"] == 1


class _Collected:
    """What the writer needs of Spark's micro-batch: its session's context, which runs the
    batch's job as one task in this process, over the batch's raw records (a stand-in for the
    Kafka reads of the offset ranges it is handed)."""

    def __init__(self, table: pa.Table) -> None:
        self.sparkSession = self
        self.sparkContext = self
        self.defaultParallelism = 1
        self.table = table

    def parallelize(self, inputs: list, slices: int) -> _Job:
        return _Job(self.table.to_batches())


class _Job:
    def __init__(self, items: list) -> None:
        self.items = items

    def mapPartitions(self, function) -> _Job:
        return _Job(list(function(iter(self.items))))

    def collect(self) -> list:
        return self.items


def test_the_writer_commits_each_batch_once_with_late_records_dead_lettered(
    tmp_path: Path,
) -> None:
    from streaming.run.micro_batch import BatchWriter

    deployment = Deployment(PIPELINE.name, "v1", tmp_path)
    batches = [
        ([_customer(0, T0, "DE"), _txn(0, T0 + 1_000, "t1")], _ends(1, 1)),
        ([_txn(1, T0 + 2_000_000, "t2", "FR"), _customer(1, T0 + 1_500, "FR")], _ends(2, 2)),
        ([_txn(2, T0 + 2_000, "t-late")], _ends(2, 3)),
    ]
    log = deployment.checkpoint_path / "offsets"
    log.mkdir(parents=True)
    deployment.checkpoint.record_start({"customers": {0: 0}, "transactions": {0: 0}})
    for batch_id, (_, ends) in enumerate(batches):
        (log / str(batch_id)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(ends)}\n')
    writer = BatchWriter(PIPELINE, deployment, partitions=ONE)
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


ONE = StatePartitions(Partitioning.BY_INPUT_PARTITION, 1)

# The bound the README states for a running deployment's state directory: two snapshots and the
# changelogs of at most 100 batches (a snapshot every 100 batches at the latest).
MAX_SNAPSHOTS = 2
MAX_CHANGELOGS = 100


def test_the_state_directory_stays_bounded_over_many_batches(tmp_path: Path) -> None:
    from streaming.run.micro_batch import BatchWriter

    deployment = Deployment(PIPELINE.name, "v1", tmp_path)
    log = deployment.checkpoint_path / "offsets"
    log.mkdir(parents=True)
    deployment.checkpoint.record_start({"customers": {0: 0}, "transactions": {0: 0}})
    writer = BatchWriter(PIPELINE, deployment, partitions=ONE)
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
        store = deployment.state_path / "partition-0000"
        kinds = [p.name.split("-")[0] for p in store.iterdir()]
        for kind in most:
            most[kind] = max(most[kind], kinds.count(kind))
    writer.close()
    assert most["snapshot"] <= MAX_SNAPSHOTS and most["changelog"] <= MAX_CHANGELOGS, most

    # What is left is enough to go on: a restarted deployment loads the state of the last batch.
    again = BatchWriter(PIPELINE, deployment, partitions=ONE)
    ends = _ends(batches, batches + 1)
    (log / str(batches)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(ends)}\n')
    last = _txn(batches, T0 + 10 * batches, "t-after", "?")
    again(_Collected(_raw([last])), batches)  # type: ignore[arg-type]
    rows = {r["txn_id"]: r for r in read_arrow(deployment.table_path).to_pylist()}
    assert len(rows) == batches + 1
    # as of the customer's move in the batch before
    assert rows["t-after"]["customer_country"] == ("DE", "FR", "NL")[(batches - 1) % 3]


def test_payment_history_alerts_are_corrected_by_an_earlier_payment(tmp_path: Path) -> None:
    """A stateful function on the executor path: per customer, in event-time order, an alert
    withdrawn when an out-of-order payment changes the history before it, a late payment
    dead-lettered, and a partition far ahead in event time making no other partition late."""
    from pipelines.fraud_by_history import PIPELINE as HISTORY

    deployment = Deployment(HISTORY.name, "v1", tmp_path)
    tasks = Tasks(HISTORY, deployment)
    ahead = {"txn_id": "x", "customer_id": "c2", "amount": 1, "currency": "EUR", "country": "AU"}
    first = _raw(
        [
            *(_txn(i, T0 + i * 1_000, f"t{i}", "FR" if i % 2 else "DE") for i in range(4)),
            ("transactions", 1, 0, T0 + 10_000_000, "c2", {**ahead, "ts": T0 + 10_000_000}),
        ]
    )
    tasks.run(first, 0, {"transactions": {"0": 4, "1": 1}})
    assert tasks.rows("txn_id") == {}  # the first payments of both customers
    tasks.run(_raw([_txn(4, T0 + 20_000, "t-us", "US")]), 1, {"transactions": {"0": 5, "1": 1}})
    rows = tasks.rows("txn_id")
    assert rows["t-us"]["reason"] == "first payment from US after 4 payments from EU (4)"
    assert rows["t-us"]["amount"] == Decimal("12.50") and rows["t-us"]["region"] == "US"
    second = _raw(
        [
            _txn(5, T0 + 2_500, "t-ooo", "US"),  # out of order, within grace
            _txn(6, T0 + 20_000 - 1_200_000, "t-late", "BR"),
        ]
    )
    tasks.run(second, 2, {"transactions": {"0": 7, "1": 1}})
    rows = tasks.rows("txn_id")
    assert sorted(rows) == ["t-ooo"]  # t-us is no longer the customer's first US payment
    assert rows["t-ooo"]["reason"] == "first payment from US after 3 payments from EU (3)"
    [dead] = tasks.dead.read().to_pylist()
    assert (dead["offset"], dead["error"]) == (6, "late")
    tasks.run(_raw([_txn(7, T0 + 25_000, "t-jp", "JP")]), 3, {"transactions": {"0": 8, "1": 1}})
    rows = tasks.rows("txn_id")
    assert sorted(rows) == ["t-jp", "t-ooo"]
    assert rows["t-jp"]["reason"] == "first payment from JP after 6 payments from EU (4), US (2)"


def test_a_user_defined_aggregation_over_sliding_windows(tmp_path: Path) -> None:
    """Kafka Streams' sliding-window example (5 s; records at 8, 9.2 and 12.4 s, the second out
    of order) on the executor path, aggregated by a user-defined aggregation kept as JSON."""
    from datetime import timedelta

    from pipelines.topics import TRANSACTIONS
    from streaming.define import Aggregator, Count, Sliding

    class Countries(Aggregator):
        returns = str

        def initial(self) -> list:
            return []

        def add(self, state: list, value: str) -> list:
            return sorted({*state, value})

        def merge(self, a: list, b: list) -> list:
            return sorted({*a, *b})

        def result(self, state: list) -> str:
            return ",".join(state)

    plan = TRANSACTIONS.stream().group_by(
        "customer_id",
        window=Sliding(timedelta(seconds=5)),
        aggregations={"n": Count(), "countries": Countries("country")},
    )
    pipeline = Pipeline(name="countries", version="v1", plan=plan)
    tasks = Tasks(pipeline, Deployment(pipeline.name, "v1", tmp_path))
    tasks.run(_raw([_txn(0, T0 + 8_000, "a"), _txn(1, T0 + 12_400, "b", "FR")]), 0, _ends(0, 2))
    tasks.run(_raw([_txn(2, T0 + 9_200, "c", "IT")]), 1, _ends(0, 3))
    rows = read_arrow(tasks.deployment.table_path).to_pylist()
    windows = {r["window_start"] - T0: (r["window_end"] - T0, r["n"], r["countries"]) for r in rows}
    assert windows == {
        3_000: (8_001, 1, "DE"),
        4_200: (9_201, 2, "DE,IT"),
        7_400: (12_401, 3, "DE,FR,IT"),
        8_001: (13_002, 2, "FR,IT"),
        9_201: (14_202, 1, "FR"),
    }


def test_a_quiet_customer_appears_by_an_event_time_timer_and_goes_with_its_next_payment(
    tmp_path: Path,
) -> None:
    from pipelines.quiet_customers import PIPELINE as QUIET

    day = 86_400_000
    tasks = Tasks(QUIET, Deployment(QUIET.name, "v1", tmp_path))
    other = {"txn_id": "o", "customer_id": "c2", "amount": 1, "currency": "EUR", "country": "DE"}
    tasks.run(_raw([_txn(0, T0, "t0"), _txn(1, T0 + day, "t1")]), 0, _ends(0, 2))
    later = T0 + 31 * day + 600_000  # its horizon (minus the grace) is 30 days after t1
    tasks.run(_raw([("transactions", 0, 2, later, "c2", {**other, "ts": later})]), 1, _ends(0, 3))
    quiet = {"customer_id": "c1", "last_txn_ts": T0 + day, "quiet_since": T0 + 31 * day}
    assert tasks.rows("customer_id") == {"c1": quiet}
    tasks.run(_raw([_txn(3, later, "t3")]), 2, _ends(0, 4))
    assert tasks.rows("customer_id") == {}
