"""A pipeline's versions as asset metadata: live version, candidates and their progress, the last
comparison, and the switch history, observed on the ``tables/<pipeline>`` asset."""

# No `from __future__ import annotations`: kept consistent with the other Dagster modules.

from typing import Any

from dagster import AssetKey, AssetObservation, MetadataValue

from streaming.settings import Settings
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
