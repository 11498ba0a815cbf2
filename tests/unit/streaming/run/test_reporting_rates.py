"""A deployment's reported rates count records, from the writer's own batch results (for a plan,
Spark's progress counts the offset ranges its source hands over)."""

from __future__ import annotations

from streaming.run.micro_batch import BatchResult
from streaming.run.reporting import batch_rates


def _result(batch_id: int, rows: int, duration_s: float, finished_at: float, skipped=False):
    return BatchResult(batch_id, skipped, rows, 0, rows, batch_id, {}, duration_s, finished_at)


def test_rates_are_the_last_committed_batchs_records_per_second():
    results = [
        _result(0, 1000, 2.0, 100.0),
        _result(1, 3000, 1.5, 104.0),
        _result(2, 0, 0.1, 105.0, skipped=True),
    ]
    arrived, processed = batch_rates(results)
    assert processed == 2000.0  # 3,000 records in 1.5 s
    assert arrived == 750.0  # 3,000 records since the batch before, 4 s earlier


def test_no_committed_batch_has_no_rate():
    assert batch_rates([]) == (0.0, 0.0)
    assert batch_rates([_result(0, 5, 1.0, 1.0, skipped=True)]) == (0.0, 0.0)
    assert batch_rates([_result(0, 500, 0.5, 1.0)]) == (1000.0, 1000.0)
