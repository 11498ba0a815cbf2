"""The platform benchmark's lag: the age of the oldest record a table's commit does not cover."""

from __future__ import annotations

from bench.table_freshness import LogEnds, percentile


def _log(samples: list[tuple[float, dict[int, int]]]) -> LogEnds:
    ends = iter(samples)
    current: dict[str, dict[int, int]] = {}

    def latest(topics: list[str]) -> dict[str, dict[int, int]]:
        return current

    log = LogEnds(latest, ["t"])
    for at, parts in ends:
        current = {"t": parts}
        log.sample(at)
    return log


def test_a_table_covering_the_log_has_no_lag():
    log = _log([(100.0, {0: 5, 1: 3}), (101.0, {0: 8, 1: 3})])
    assert log.lag_s({"t": {0: 8, 1: 3}}, ["t"], now=105.0) == 0.0


def test_the_lag_is_the_age_of_the_oldest_uncovered_record_over_partitions():
    # Partition 0's record 5 appeared at 101, partition 1's record 3 at 102.
    log = _log([(100.0, {0: 5, 1: 3}), (101.0, {0: 8, 1: 3}), (102.0, {0: 9, 1: 4})])
    assert log.lag_s({"t": {0: 5, 1: 3}}, ["t"], now=110.0) == 9.0
    assert log.lag_s({"t": {0: 9, 1: 3}}, ["t"], now=110.0) == 8.0
    # A partition the commit never read counts from its first record.
    assert log.lag_s({"t": {0: 9}}, ["t"], now=110.0) == 10.0
    # Topics the table does not read do not count.
    assert log.lag_s({"t": {0: 5}}, ["other"], now=110.0) == 0.0


def test_no_commit_yet_has_no_lag_figure():
    assert _log([(1.0, {0: 1})]).lag_s(None, ["t"], now=2.0) is None


def test_percentiles_by_nearest_rank():
    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 0.95) == 19.0
    assert percentile(values, 0.5) == 10.0
    assert percentile([3.0], 0.95) == 3.0
