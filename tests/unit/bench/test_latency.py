"""The latency benchmark's arithmetic: each record is timed to the first batch covering it."""

import pytest

from bench.measures import percentile, split_latencies, visible_latencies
from bench.processes import SeenCommit


def test_records_are_timed_to_the_first_batch_and_commit_covering_them() -> None:
    delivered = [(0, 0, 10_000), (0, 1, 10_500), (1, 0, 10_600)]  # partition, offset, ms
    planned = [(10.2, {0: 1}), (11.0, {0: 2, 1: 1})]
    commits = [SeenCommit(1, 10.9, {0: 1}), SeenCommit(2, 11.8, {0: 2, 1: 1})]
    assert visible_latencies(delivered, commits) == pytest.approx([0.9, 1.3, 1.2])
    waits, runs = split_latencies(delivered, planned, commits)
    assert waits == pytest.approx([0.2, 0.5, 0.4])
    assert runs == pytest.approx([0.7, 0.8, 0.8])


def test_a_record_no_commit_covers_is_an_error_not_a_fast_result() -> None:
    with pytest.raises(RuntimeError, match="never became visible"):
        visible_latencies([(0, 5, 0)], [SeenCommit(1, 1.0, {0: 5})])


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 99)) == (
        50.0,
        95.0,
        99.0,
    )
