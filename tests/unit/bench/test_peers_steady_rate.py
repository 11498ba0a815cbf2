"""The peers benchmark's steady rate: measured over the second half of the log, and only when
enough of it came after the half mark."""

from __future__ import annotations

from bench.peers.progress import Probe
from bench.peers.runs import steady_rate


def _probe(seen: list[tuple[float, int]]) -> Probe:
    probe = Probe()
    probe.seen = [(at, {("t", 0): count}, 0) for at, count in seen]
    return probe


def test_the_rate_is_the_records_after_the_half_mark_over_their_time() -> None:
    probe = _probe([(10.0, 250), (12.0, 500), (14.0, 750), (16.0, 1000)])
    assert steady_rate(probe, 1000, 16.0) == 500 / 4.0


def test_a_log_covered_in_one_batch_has_no_rate() -> None:
    # The closing records after the one batch are not the engine's steady state.
    probe = _probe([(10.0, 997), (40.0, 1000)])
    assert steady_rate(probe, 1000, 40.0) is None
