"""A plan's tasks get their offset ranges from the driver: partition p of every input together,
nothing listed for a partition with nothing to read."""

from __future__ import annotations

from streaming.kafka import offsets as off
from streaming.run.task_job import ranges_batch


def test_a_task_gets_partition_p_of_every_input_and_no_empty_range():
    start = {"t": {0: 5, 1: 0}, "u": {0: 0, 1: 7}}
    end = {"t": {0: 9, 1: 0}, "u": {0: 3, 1: 8}}
    groups = off.pack_ranges(off.plan_ranges(start, end), 2, 0, copartition=True)
    tasks = [ranges_batch(group).to_pylist() for group in groups]
    as_tuples = sorted(sorted(tuple(r.values()) for r in task) for task in tasks)
    # Partition 1 of t has nothing to read, so it is not listed.
    assert as_tuples == [[("t", 0, 5, 9), ("u", 0, 0, 3)], [("u", 1, 7, 8)]]


def test_a_small_batch_is_one_task():
    start = {"t": {0: 0, 1: 0}}
    end = {"t": {0: 10, 1: 10}}
    groups = off.pack_ranges(off.plan_ranges(start, end), 2, off.MIN_TASK_RECORDS, copartition=True)
    assert len(groups) == 1
