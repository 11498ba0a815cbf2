"""The peers benchmark's steady rate: measured after the first quarter of the log, and only when
enough of it came after that mark."""

from __future__ import annotations

from bench.peers.progress import Probe
from bench.peers.runs import steady_rate


def _probe(seen: list[tuple[float, int]]) -> Probe:
    probe = Probe()
    probe.seen = [(at, {("t", 0): count}, 0) for at, count in seen]
    return probe


def test_the_rate_is_the_records_after_the_quarter_mark_over_their_time() -> None:
    probe = _probe([(10.0, 250), (12.0, 500), (14.0, 750), (16.0, 1000)])
    assert steady_rate(probe, 1000, 16.0) == 750 / 6.0


def test_a_first_batch_just_short_of_half_the_log_leaves_the_second_to_rate() -> None:
    probe = _probe([(20.0, 499_998), (23.0, 1_000_000)])
    assert steady_rate(probe, 1_000_000, 23.0) == 500_002 / 3.0


def test_a_log_covered_in_one_batch_has_no_rate() -> None:
    # The closing records after the one batch are not the engine's steady state.
    probe = _probe([(10.0, 997), (40.0, 1000)])
    assert steady_rate(probe, 1000, 40.0) is None
