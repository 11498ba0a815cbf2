"""What a running deployment reports, as Dagster events on its version's partition.

Each progress report becomes, on partition ``<version>`` of ``tables/<pipeline>``:

- a materialization when the version serves readers (it is live) and its table changed, with the
  pipeline's versions overview, so the asset page's latest materialization says which version is
  live, which are catching up and how far, and how the last comparison ended;
- an observation otherwise (a candidate catching up, a retained version, a live one that is
  idle): its role, catch-up progress and ETA, health;
- the ``lag`` and ``freshness`` check evaluations, about the version's latest materialization,
  which therefore complete with every report instead of waiting for the run to end.

The run's first report also carries the settings it deployed with, secrets masked.

A version that does not serve never materializes, so a comparison verdict on its partition stays
the one shown until a newer comparison replaces it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetMaterialization,
    AssetObservation,
    MetadataValue,
)

from assets.checks.comparison import planned_gate_checks, settled_gate_evaluations
from assets.checks.health import check_evaluations
from assets.versions.metadata import overview_metadata
from streaming.deployment import Deployment
from streaming.errors import KappaError
from streaming.run.pipes_reporter import snapshot_metadata
from streaming.run.reporting import Snapshot
from streaming.settings import Settings
from streaming.versions.overview import overview

_TYPED = {
    "text": MetadataValue.text,
    "path": MetadataValue.path,
    "json": MetadataValue.json,
    "md": MetadataValue.md,
    "url": MetadataValue.url,
    "int": MetadataValue.int,
    "float": MetadataValue.float,
    "bool": MetadataValue.bool,
}


def metadata_values(typed: Mapping[str, Mapping[str, Any]]) -> dict[str, MetadataValue]:
    """Pipes-typed metadata (``{"raw_value": ..., "type": ...}``) as Dagster metadata values."""
    return {label: _TYPED[v["type"]](v["raw_value"]) for label, v in typed.items()}


def settings_metadata(settings: Settings) -> dict[str, MetadataValue]:
    """The settings a deployment runs with, as Dagster metadata (``Settings.shown``)."""
    return {"settings": MetadataValue.json(settings.shown())}


def serves(snapshot: Snapshot) -> bool:
    """Whether the reporting version is the one readers see (no role: a run outside versions)."""
    return snapshot.role in ("", "live")


class DeploymentRelay:
    """Turns one deployment's reports (Pipes messages, or the engine's events) into Dagster
    events."""

    def __init__(
        self, context: AssetExecutionContext, deployment: Deployment, settings: Settings
    ) -> None:
        self.context = context
        self.deployment = deployment
        self.settings = settings
        self.key = context.asset_key
        self.table_version: int | None = None
        self.last: Snapshot | None = None
        self.last_metadata: dict[str, Any] | None = None
        self.warnings: list[str] = []
        self.unsettled_gate = planned_gate_checks(context)

    def drain(self, messages: Sequence[Any]) -> Iterator[Any]:
        """Dagster events for ``messages``, the deployment's reports not relayed before."""
        for message in messages:
            if not isinstance(message, dict):
                continue
            if message.get("kind") == "warning":
                self.warnings.append(str(message.get("message", "")))
            if message.get("kind") not in ("progress", "finished"):
                continue
            snapshot = Snapshot(**{k: v for k, v in message.items() if k != "kind"})
            yield self._event(snapshot, progress=message["kind"] == "progress")
            # After the event is stored, so the checks are about the materialization just made.
            for evaluation in check_evaluations(self.context.instance, self.key, snapshot):
                self.context.log_event(evaluation)
            self._settle_gate()

    def _settle_gate(self) -> None:
        """Settle the comparison checks this run planned once the version is known not to be a
        candidate (a first deployment becomes live only after it has started)."""
        if not self.unsettled_gate:
            return
        names, deployment = self.unsettled_gate, self.deployment
        settled = settled_gate_evaluations(self.context, self.settings, deployment, names)
        for evaluation in settled:
            self.context.log_event(evaluation)
        if settled:
            self.unsettled_gate = []

    def _event(self, snapshot: Snapshot, progress: bool) -> AssetMaterialization | AssetObservation:
        metadata = self.metadata(snapshot)
        self.last, self.last_metadata = snapshot, metadata
        version = self.deployment.version
        changed = snapshot.table_version != self.table_version
        if serves(snapshot) and changed and progress:
            self.table_version = snapshot.table_version
            return AssetMaterialization(asset_key=self.key, partition=version, metadata=metadata)
        return AssetObservation(asset_key=self.key, partition=version, metadata=metadata)

    def metadata(self, snapshot: Snapshot) -> dict[str, Any]:
        metadata: dict[str, Any] = metadata_values(snapshot_metadata(snapshot))
        if self.last is None:
            metadata.update(settings_metadata(self.settings))
        if self.warnings:  # e.g. the code changed without a new version: shown with the table
            metadata["warnings"] = MetadataValue.text("\n".join(self.warnings))
        if serves(snapshot):
            metadata.update(self._overview())
        return metadata

    def _overview(self) -> dict[str, Any]:
        # A deployment keeps running its pinned code after its pipeline left the registry (or
        # while the settings are broken): the report then goes without the versions overview.
        try:
            return overview_metadata(overview(self.settings, self.deployment.pipeline))
        except KappaError as exc:
            self.context.log.warning(f"versions overview unavailable: {exc}")
            return {}

    def final(self) -> dict[str, Any] | None:
        """The last report's metadata, when the version served: the run's materialization."""
        if self.last is None or not serves(self.last):
            return None
        return self.last_metadata
