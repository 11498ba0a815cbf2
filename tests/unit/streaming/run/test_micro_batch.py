"""The micro-batch writer of a deployment, driven without Spark through batches already committed
(a restarted query re-offers them; the writer skips them and records that it did)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from pipelines.topics import CUSTOMERS
from streaming.define import LatestPerKey, Pipeline
from streaming.deployment import Deployment
from streaming.run.micro_batch import BatchWriter


def _offsets_log(checkpoint: Path, batches: range) -> None:
    """Spark's offset log: a version line, a metadata line, one offsets line per source."""
    log = checkpoint / "offsets"
    log.mkdir(parents=True, exist_ok=True)
    for batch_id in batches:
        offsets = json.dumps({"customers": {"0": batch_id + 1}})
        (log / str(batch_id)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{offsets}\n')


def test_a_long_continuous_run_keeps_a_bounded_batch_history(tmp_path):
    # a per-batch transform (the deprecated form): what this writer runs
    pipeline = Pipeline(
        name="customers",
        version="v1",
        topics=(CUSTOMERS,),
        transform=lambda records: records,
        table=LatestPerKey(key="customer_id", position=("partition", "offset")),
        table_schema=CUSTOMERS.schema()
        .append(pa.field("partition", pa.int32()))
        .append(pa.field("offset", pa.int64())),
    )
    deployment = Deployment("customers", "v1", tmp_path)
    writer = BatchWriter(pipeline, deployment)
    empty = pipeline.table.change_schema(pipeline.table_schema).empty_table()
    writer.table.apply(empty, 10_000, {}, deployment.id)  # every batch below is committed
    _offsets_log(deployment.checkpoint_path, range(1200))

    for batch_id in range(600):
        writer(None, batch_id)  # type: ignore[arg-type]
    kept_after_600 = len(writer.results)
    for batch_id in range(600, 1200):
        writer(None, batch_id)  # type: ignore[arg-type]

    assert len(writer.results) == kept_after_600 < 600
    last = writer.results[-1]
    assert last.batch_id == 1199 and last.skipped
    assert last.end_offsets == {"customers": {"0": 1200}}
    assert writer.totals.batches == 0  # replays of committed batches commit nothing
