"""Versions as dynamic partitions of each table asset.

``tables/<pipeline>`` has one partition per version of the pipeline (``<pipeline>_versions``).
Materializing partition ``v2`` runs the v2 deployment; each version's role, progress, health,
materializations and checks are its partition's, so several versions side by side are several
partitions of one asset. The new-version sensor adds the declared version as a partition, and
adding one from the UI's launch dialog reprocesses under a new version name.
"""

from __future__ import annotations

from collections.abc import Iterable

from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, DynamicPartitionsDefinition

# Not exported at the top level of dagster 1.13; it is the type of AssetCheckEvaluation's
# ``target_materialization_data`` argument.
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

from streaming.dagster_names import versions_partitions_name


def version_partitions(pipeline: str) -> DynamicPartitionsDefinition:
    """The partitions of ``tables/<pipeline>``: its versions."""
    return DynamicPartitionsDefinition(name=versions_partitions_name(pipeline))


def unregistered(instance: DagsterInstance, pipeline: str, versions: Iterable[str]) -> list[str]:
    """The versions that are not partitions of the pipeline's table yet, in order."""
    known = set(instance.get_dynamic_partitions(versions_partitions_name(pipeline)))
    return sorted({v for v in versions if v not in known})


def check_target(
    instance: DagsterInstance, key: AssetKey, version: str
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The version's latest materialization, which a check evaluated now is about.

    Dagster shows a partition's check result only while it targets that partition's latest
    materialization (a version that never served has none, so any result stands).
    """
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[version]), limit=1
    ).records
    if not records:
        return None
    latest = records[0]
    return AssetCheckEvaluationTargetMaterializationData(
        storage_id=latest.storage_id,
        run_id=latest.event_log_entry.run_id,
        timestamp=latest.timestamp,
    )
