"""The platform benchmark's CPU per role: per process, so processes that come and go between the
two samples never make a role's figure negative."""

from __future__ import annotations

from bench.platform_processes import Member, cpu_by_role


def test_cpu_per_role_counts_each_process_from_its_own_earlier_sample():
    before = [Member(1, "engine", 0, 10.0), Member(2, "spark-python", 0, 50.0)]
    # Worker 2 ended, worker 3 started: 3's time counts from 0, 2's is not subtracted.
    after = [Member(1, "engine", 0, 12.5), Member(3, "spark-python", 0, 4.0)]
    assert cpu_by_role(before, after) == {"engine": 2.5, "spark-python": 4.0}
