"""A pipeline's versions as asset metadata: live version, candidates and their progress, which
started forward-only and from which cut, the last comparison, the switch history, and what the
declared version changes from the live one, observed on the ``tables/<pipeline>`` asset."""

# No `from __future__ import annotations`: kept consistent with the other Dagster modules.

from typing import Any

from dagster import AssetKey, AssetObservation, DagsterInstance, MetadataValue

from assets.checks.health import latest_health
from streaming.define.pipeline import Pipeline
from streaming.settings import Settings
from streaming.versions.change import VersionChange, change_from_live
from streaming.versions.comparable import deployed_versions
from streaming.versions.live_pointer import live_version
from streaming.versions.overview import Overview, overview


def overview_metadata(view: Overview) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "live_version": view.live_version or "none",
        "declared_version": view.declared_version,
        "deployed_versions": ", ".join(v.version for v in view.versions) or "none",
        "versions": MetadataValue.md(view.markdown()),
        "switch_history": MetadataValue.md(view.history_markdown()),
    }
    for state in view.candidates:
        if state.caught_up_pct is not None:
            metadata[f"candidate.{state.version}.caught_up_pct"] = state.caught_up_pct
            metadata[f"candidate.{state.version}.behind_live"] = state.behind_live
    for state in view.versions:
        if state.forward_only_from:
            metadata[f"forward_only.{state.version}"] = f"from {state.forward_only_from}"
    if view.change is not None:
        metadata["declared_change"] = view.change.summary()
        metadata["declared_change_details"] = MetadataValue.md(view.change_markdown())
    verdict = view.last_verdict()
    if verdict:
        metadata["last_comparison"] = verdict
    if view.history:
        last = view.history[-1]
        metadata["last_switch"] = f"{last.from_version or '-'} -> {last.to_version}: {last.reason}"
    return metadata


def overview_observation(key: AssetKey, settings: Settings, pipeline: str) -> AssetObservation:
    """The overview as an observation on the live version's partition (none before a live one)."""
    view = overview(settings, pipeline)
    return AssetObservation(
        asset_key=key, partition=view.live_version, metadata=overview_metadata(view)
    )


def change_metadata(change: VersionChange) -> dict[str, Any]:
    """A version's change from the live one, as the new-version sensor reports it on the
    version's partition: category, a reason per difference, forward-only, both costs."""
    reasons = "\n".join(f"- {reason}" for reason in change.reasons) or "- nothing differs"
    metadata: dict[str, Any] = {
        "change_from_live": f"{change.live_version} -> {change.version}: {change.category}",
        "change_category": str(change.category),
        "change_reasons": MetadataValue.md(reasons),
        "forward_only_allowed": change.forward_only_allowed,
    }
    if change.refusal:
        metadata["forward_only_refused"] = change.refusal
    if change.costs is not None:
        metadata["full_replay_estimate_s"] = round(change.costs.full_replay_s, 1)
        metadata["forward_only_estimate_s"] = round(change.costs.forward_only_s, 1)
        metadata["estimates"] = MetadataValue.md(
            "\n".join(f"- {line}" for line in change.costs.lines())
        )
    return metadata


def declared_change(
    instance: DagsterInstance, key: AssetKey, settings: Settings, pipeline: Pipeline
) -> VersionChange | None:
    """The declared version's change from the live one, with its costs at the replay rate the
    pipeline's deployed versions last reported (None: the declared version is live, or there is
    none). Raises KappaError when it cannot be told (e.g. the live version has no pin)."""
    live = live_version(settings.home, pipeline.name)
    if live is None or live == pipeline.version:
        # Nothing changes: the reports the costs would be read from are not looked up (the
        # sensor asks every tick for every pipeline).
        return None
    rates = tuple(
        float(latest_health(instance, key, version).get("processed_rows_per_s") or 0.0)
        for version in deployed_versions(settings.home, pipeline.name)
    )
    return change_from_live(settings, pipeline, rates=rates)
