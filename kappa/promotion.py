"""Promotion and rollback: switching a pipeline's live version, gated by an exact comparison."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kappa.errors import KappaError
from kappa.settings import Settings
from streaming.deployment import Deployment
from streaming.live import Switch, history, live_version, switch
from streaming.pipelines import get_pipeline
from streaming.versions import comparable_pair


class PromotionBlockedError(KappaError):
    """The candidate is not caught up, or its comparison with the live version failed."""


@dataclass(frozen=True)
class Promotion:
    switch: Switch
    comparison: Any = None  # quality.ComparisonResult when one ran


def compare_with_live(settings: Settings, pipeline_name: str, version: str) -> Any:
    """Compare ``version`` with the live version at exactly the same input offsets."""
    pipeline = get_pipeline(pipeline_name)
    live = live_version(settings.home, pipeline.name)
    if live is None:
        msg = f"{pipeline.name} has no live version to compare with"
        raise PromotionBlockedError(msg)
    return compare_versions(settings, pipeline.name, live, version)


def compare_versions(
    settings: Settings, pipeline_name: str, old_version: str, new_version: str
) -> Any:
    """Compare two versions' tables at the latest input offsets both have committed."""
    from quality import compare_tables, save_result
    from streaming.spark_session import build_spark_session
    from streaming.table_reader import read_spark

    pipeline = get_pipeline(pipeline_name)
    old, new = (Deployment(pipeline.name, v, settings.home) for v in (old_version, new_version))
    pair = comparable_pair(old, new)
    if pair is None:
        msg = (
            f"{new.id} has no commit at input offsets that {old.id} also committed; catch it up "
            f"with `kappa run {pipeline.name} --version {new_version} --until-caught-up "
            "--until-live`"
        )
        raise PromotionBlockedError(msg)
    spark = build_spark_session(settings.spark.master, settings.spark.conf)
    result = compare_tables(
        read_spark(spark, old.table_path, pair.live_table_version),
        read_spark(spark, new.table_path, pair.candidate_table_version),
        pipeline.table.key,
        pipeline.comparison,
        table=pipeline.name,
        old_name=old_version,
        new_name=new_version,
        docs_dir=settings.home / "quality" / "docs" / f"{old.id}__{new_version}",
    )
    save_result(comparison_path(settings, pipeline.name, old_version, new_version), result)
    return result


def comparison_path(settings: Settings, pipeline: str, old: str, new: str) -> Any:
    return settings.home / "quality" / "comparisons" / f"{pipeline}__{old}__{new}.json"


def promote(
    settings: Settings,
    pipeline_name: str,
    version: str,
    force: bool = False,
    reason: str = "manual promotion",
) -> Promotion:
    """Make ``version`` live if it compares clean with the live version (or ``force``)."""
    pipeline = get_pipeline(pipeline_name)
    candidate = Deployment(pipeline.name, version, settings.home)
    if not candidate.table_path.exists():
        msg = f"{candidate.id} has no table; run it first (kappa run {pipeline.name} --version "
        msg += f"{version} --until-caught-up)"
        raise PromotionBlockedError(msg)
    live = live_version(settings.home, pipeline.name)
    if live == version:
        msg = f"{candidate.id} is already live"
        raise PromotionBlockedError(msg)
    if live is None:
        return Promotion(switch(settings.home, pipeline.name, version, "first live version"))
    result = compare_with_live(settings, pipeline.name, version)
    if not result.passed and not force:
        msg = f"promotion of {candidate.id} blocked: " + "; ".join(result.failures)
        raise PromotionBlockedError(msg)
    summary = {"passed": result.passed, "failures": list(result.failures), "forced": force}
    record = switch(
        settings.home, pipeline.name, version, reason, comparison=summary, expect_from=live
    )
    return Promotion(record, result)


def rollback(settings: Settings, pipeline_name: str) -> Switch:
    """Switch back to the version that was live before the last switch."""
    pipeline = get_pipeline(pipeline_name)
    switches = history(settings.home, pipeline.name)
    if not switches or switches[-1].from_version is None:
        msg = f"{pipeline.name} has no previous live version to roll back to"
        raise PromotionBlockedError(msg)
    last = switches[-1]
    previous = Deployment(pipeline.name, str(last.from_version), settings.home)
    if not previous.table_path.exists():
        msg = f"{previous.id} was retired; its table is gone"
        raise PromotionBlockedError(msg)
    return switch(
        settings.home, pipeline.name, previous.version, "rollback", expect_from=last.to_version
    )
