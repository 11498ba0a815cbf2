"""What the version sensors decide for a pipeline, and why (no Dagster here: easy to test).

1. :func:`candidate_to_launch`: the declared version (after a code-location reload) is neither
   live nor running: start it side by side from the earliest offsets.
2. :func:`comparison_to_run`: a candidate is within reach of the live position: compare it with
   the live version at equal offsets, then promote or wait, per the pipeline's policy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from streaming.define.pipeline import Pipeline
from streaming.delta.table_reader import last_end_offsets
from streaming.deployment import Deployment
from streaming.kafka.history import HistoryGoneError, check_log_has_beginning
from streaming.settings import Settings
from streaming.versions.alignment import progress
from streaming.versions.state import Role, pipeline_versions

# A candidate at most this many records behind the live position (or 99% there) is compared;
# the comparison itself waits until it has reached the live position exactly.
WITHIN_REACH_RECORDS = 50_000
WITHIN_REACH_PCT = 99.0

RunState = Literal["none", "active", "succeeded", "failed"]


@dataclass(frozen=True)
class Decision:
    pipeline: str
    act: bool
    reason: str
    version: str | None = None
    live: str | None = None  # the live version the decision was taken against


def _decision(
    pipeline: Pipeline, reason: str, act: bool = False, live: str | None = None
) -> Decision:
    return Decision(pipeline.name, act, f"{pipeline.name}: {reason}", pipeline.version, live)


def candidate_to_launch(settings: Settings, pipeline: Pipeline, runs: RunState) -> Decision:
    """``runs``: the state of the deploy runs already launched for the declared version's code."""
    versions = pipeline_versions(settings, pipeline.name)
    live = versions.live
    declared = pipeline.version
    name = pipeline.name

    if live is None:
        return _decision(
            pipeline, f"no live version yet; materialize tables/{name} to deploy {declared}"
        )
    if versions.role(declared) == Role.LIVE:
        return _decision(pipeline, f"the declared version {declared} is live")
    candidate = Deployment(name, declared, settings.home)
    if runs == "active" or candidate.lock.holder() is not None:
        return _decision(pipeline, f"candidate {declared} is running side by side with live {live}")
    if runs != "none":
        return _decision(
            pipeline,
            f"candidate {declared} was launched already for this code (last run {runs}); "
            f"launch deploy_{name} with version {declared} to restart it",
        )
    if not candidate.checkpoint.started:
        try:
            check_log_has_beginning(settings.kafka.client_config(), pipeline.topics)
        except HistoryGoneError as exc:
            return _decision(pipeline, f"not launching {declared}: {exc}")
    return _decision(
        pipeline,
        f"declared version {declared} differs from live {live}; starting it side by side from "
        "the earliest offsets",
        act=True,
    )


def comparison_to_run(
    settings: Settings, pipeline: Pipeline, runs_against: Callable[[str], RunState]
) -> Decision:
    """``runs_against(live)``: the state of the latest comparison run of this candidate against
    that live version. The live pointer is read once, and the run state asked of that version:
    a rollback landing while the sensor evaluates must not make an earlier comparison look
    missing (that would promote the rolled-back version again)."""
    versions = pipeline_versions(settings, pipeline.name)
    live = versions.live
    declared = pipeline.version
    name = pipeline.name

    def decide(reason: str, act: bool = False) -> Decision:
        return _decision(pipeline, reason, act, live)

    if live is None or versions.role(declared) == Role.LIVE:
        return decide("no candidate (the declared version is live)")
    candidate = Deployment(name, declared, settings.home)
    live_at = last_end_offsets(Deployment(name, live, settings.home).table_path)
    at = last_end_offsets(candidate.table_path)
    if live_at is None or at is None:
        return decide(f"candidate {declared} or live {live} has not committed yet")
    behind, pct = progress(at, live_at)
    runs = runs_against(live)
    if runs == "active":
        return decide(f"comparing {declared} with {live}")
    if runs == "succeeded":
        action = "promoted" if pipeline.promotion == "auto" else "waiting for a manual promotion"
        return decide(f"{declared} passed the comparison with {live}; {action}")
    if runs == "failed" and _failed_comparison(settings, name, live, declared):
        return decide(
            f"{declared} failed the comparison with {live} (see the candidate checks); fix the "
            "code and bump the version, or promote with force"
        )
    if behind > WITHIN_REACH_RECORDS and pct < WITHIN_REACH_PCT:
        return decide(f"candidate {declared} is {pct:.1f}% caught up ({behind} records behind)")
    return decide(
        f"candidate {declared} is {pct:.1f}% caught up ({behind} records behind {live}); "
        f"comparing at equal offsets, then {pipeline.promotion} promotion",
        act=True,
    )


def _failed_comparison(settings: Settings, pipeline: str, live: str, version: str) -> bool:
    from quality import load_result

    old, new = (Deployment(pipeline, v, settings.home) for v in (live, version))
    path = old.comparison_with(new).result_path
    return path.exists() and not load_result(path).passed
