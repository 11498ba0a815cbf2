"""The peers benchmark's summary: medians over the right runs, ratios against each peer, the
machine's load per engine, and the engines that do not run a workload named with the reason."""

from __future__ import annotations

from typing import Any

from bench.peers import report


def _cold(wall: float, steady: float, load: float, same: bool = True) -> dict[str, Any]:
    return {
        "wall_s": wall,
        "steady_events_per_s": steady,
        "peak_rss_bytes": report.GB,
        "verdict": {"same": same, "rows": 10, "missing": 0, "extra": 0, "differ": 0},
        "load_before": [load, 0.0, 0.0],
        "load_after": [load, 0.0, 0.0],
    }


def _results() -> dict[str, Any]:
    platform = [_cold(10.0, 100.0, 2.0), _cold(12.0, 120.0, 5.0), _cold(30.0, 50.0, 9.0)]
    peer = [_cold(20.0, 60.0, 3.0), _cold(24.0, 40.0, 4.0), _cold(1.0, 999.0, 1.0, same=False)]
    results: dict[str, Any] = {
        "machine": report.machine(),
        "args": {
            "events": 100,
            "keys": 10,
            "repeats": 3,
            "rate_repeats": 3,
            "rate": 5000,
            "latency_seconds": 10.0,
            "warmup_seconds": 5.0,
            "workloads": "latest",
            "commit_interval_ms": 100,
            "ks_threads": 2,
        },
        "load_start": [1.0, 1.0, 1.0],
        "load_end": [2.0, 2.0, 2.0],
        "workloads": {"latest": {"platform": {"cold": platform}, "quix": {"cold": peer}}},
        "not_run": {"spark": {"workloads": ["latest"], "why": "no such operator"}},
    }
    results["summary"] = report.summarize(results)
    results["ratios"] = report.ratios(results["summary"])
    results["targets"] = report.targets(results)
    return results


def test_figures_are_medians_of_the_right_runs_and_ratios_of_the_medians() -> None:
    results = _results()
    mine, theirs = results["summary"]["latest"]["platform"], results["summary"]["latest"]["quix"]
    assert mine["cold_wall_s"] == 12.0
    assert theirs["cold_wall_s"] == 22.0  # the wrong run does not count
    assert not theirs["correct"]
    assert results["ratios"]["latest"]["quix"]["cold_x"] == 22.0 / 12.0
    assert results["ratios"]["latest"]["quix"]["steady_x"] == 100.0 / 50.0


def test_the_table_shows_each_engines_load_and_what_was_not_run() -> None:
    results = _results()
    assert results["summary"]["latest"]["platform"]["load_1min"] == [2.0, 9.0]
    text = report.render(results)
    assert "2.0-9.0" in text
    assert "not run: spark on latest: no such operator" in text
