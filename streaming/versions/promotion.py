"""Promotion and rollback: switching a pipeline's live version, gated by an exact comparison.

A forward-only candidate is compared on the rows written after the cut it started from
(``streaming.versions.after_cut``): the rows before it are the live version's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from streaming.define.registry import get_pipeline
from streaming.delta.table_reader import last_end_offsets
from streaming.deployment import Deployment
from streaming.errors import VersionError
from streaming.kafka import offsets as off
from streaming.settings import Settings
from streaming.spark.session import SparkProvider, session_provider
from streaming.versions.after_cut import rows_after_cut
from streaming.versions.comparable import comparable_pair
from streaming.versions.forward_only import completed_start
from streaming.versions.live_pointer import Switch, history, live_version, switch
from streaming.wait import wait_until


class PromotionBlockedError(VersionError):
    """The candidate is not caught up, or its comparison with the live version failed."""


@dataclass(frozen=True)
class Promotion:
    switch: Switch
    comparison: Any = None  # quality.ComparisonResult when one ran


def compare_with_live(
    settings: Settings,
    pipeline_name: str,
    version: str,
    wait_s: float | None = None,
    spark: SparkProvider | None = None,
) -> Any:
    """Compare ``version`` with the live version at exactly the same input offsets.

    With ``wait_s``, first wait (up to that long) until the candidate has processed at least the
    offsets the live version had committed when the comparison started.
    """
    pipeline = get_pipeline(settings.pipelines, pipeline_name)
    live = live_version(settings.home, pipeline.name)
    if live is None:
        msg = f"{pipeline.name} has no live version to compare with"
        raise PromotionBlockedError(msg)
    if live == version:
        msg = f"{pipeline.name} {version} is the live version; compare a candidate with it"
        raise PromotionBlockedError(msg)
    if wait_s is not None:
        wait_until_caught_up(settings, pipeline.name, live, version, wait_s)
    return compare_versions(settings, pipeline.name, live, version, spark)


def wait_until_caught_up(
    settings: Settings, pipeline_name: str, live: str, candidate: str, wait_s: float
) -> None:
    """Wait until ``candidate`` and the live version share a commit at offsets >= the live
    version's latest commit now. Raises PromotionBlockedError when the deadline passes first."""
    old = Deployment(pipeline_name, live, settings.home)
    new = Deployment(pipeline_name, candidate, settings.home)
    target = last_end_offsets(old.table_path)
    if target is None:
        msg = f"{old.id} has committed nothing yet; nothing to compare with"
        raise PromotionBlockedError(msg)

    def reached() -> bool:
        # Cheap check first (the newest log entries); both histories only once it is there.
        at = last_end_offsets(new.table_path)
        if at is None or off.total_lag(at, target) > 0:
            return False
        pair = comparable_pair(old, new)
        return pair is not None and off.total_lag(pair.offsets, target) == 0

    if not wait_until(reached, wait_s, interval_s=0.5):
        done = last_end_offsets(new.table_path) or {}
        msg = (
            f"{new.id} has not caught up with {old.id} after {wait_s:.0f} s: "
            f"{off.total_lag(done, target)} records behind the live position; is it running?"
        )
        raise PromotionBlockedError(msg)


def compare_versions(
    settings: Settings,
    pipeline_name: str,
    old_version: str,
    new_version: str,
    spark: SparkProvider | None = None,
) -> Any:
    """Compare two versions' tables at the latest input offsets both have committed.

    ``spark`` gives the session, asked for only once there is something to compare (default:
    the platform's session, built from the settings).
    """
    from quality import compare_tables, save_result
    from streaming.delta.table_reader import read_spark

    pipeline = get_pipeline(settings.pipelines, pipeline_name)
    old, new = (Deployment(pipeline.name, v, settings.home) for v in (old_version, new_version))
    pair = comparable_pair(old, new)
    if pair is None:
        msg = (
            f"{new.id} has no commit at input offsets that {old.id} also committed; catch it up "
            f"with `kappa run {pipeline.name} --version {new_version} --until-caught-up "
            "--until-live`"
        )
        raise PromotionBlockedError(msg)
    session = (spark or session_provider(settings))()
    old_rows = read_spark(session, old.table_path, pair.live_table_version)
    new_rows = read_spark(session, new.table_path, pair.candidate_table_version)
    scope = ""
    start = completed_start(new)
    if start is not None and start.cut.version == old.version:
        # A forward-only candidate: the rows before its cut are the live version's own.
        keys = pipeline.table.keys
        old_rows, new_rows, scope = rows_after_cut(session, new, start, old_rows, new_rows, keys)
    result = compare_tables(
        old_rows,
        new_rows,
        pipeline.table.keys,
        pipeline.comparison,
        table=pipeline.name,
        old_name=old_version,
        new_name=new_version,
        docs_dir=old.comparison_with(new).docs_path,
    )
    if scope:
        result = result.model_copy(update={"scope": scope})
    save_result(old.comparison_with(new).result_path, result)
    where = {
        "offsets": off.to_spark(pair.offsets),
        "old_table_version": pair.live_table_version,
        "new_table_version": pair.candidate_table_version,
    }
    old.comparison_with(new).position_path.write_text(json.dumps(where))
    return result


def comparison_offsets(settings: Settings, pipeline: str, old: str, new: str) -> dict:
    """The input offsets (and table versions) the last comparison of two versions used."""
    live, candidate = (Deployment(pipeline, v, settings.home) for v in (old, new))
    path = live.comparison_with(candidate).position_path
    return json.loads(path.read_text()) if path.exists() else {}


def promote(
    settings: Settings,
    pipeline_name: str,
    version: str,
    force: bool = False,
    reason: str = "manual promotion",
    wait_s: float | None = None,
    actor: str = "kappa",
    comparison: Any = None,
    spark: SparkProvider | None = None,
) -> Promotion:
    """Make ``version`` live if it compares clean with the live version (or ``force``).

    ``wait_s``: wait up to that long for the candidate to catch up before comparing;
    ``comparison``: a comparison with the live version just made (not repeated); ``spark``:
    see :func:`compare_versions`.
    """
    pipeline = get_pipeline(settings.pipelines, pipeline_name)
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
    if comparison is not None and comparison.old_name != live:
        comparison = None  # the live version changed since: compare again
    result = comparison or compare_with_live(settings, pipeline.name, version, wait_s, spark)
    if not result.passed and not force:
        msg = f"promotion of {candidate.id} blocked: " + "; ".join(result.failures)
        raise PromotionBlockedError(msg)
    summary = {
        "passed": result.passed,
        "failures": list(result.failures),
        "forced": force,
        "at_offsets": comparison_offsets(settings, pipeline.name, live, version),
        "data_docs": result.docs_page or "",
    }
    record = switch(
        settings.home,
        pipeline.name,
        version,
        reason,
        comparison=summary,
        expect_from=live,
        actor=actor,
    )
    return Promotion(record, result)


def rollback(settings: Settings, pipeline_name: str, actor: str = "kappa") -> Switch:
    """Switch back to the version that was live before the last switch."""
    pipeline = get_pipeline(settings.pipelines, pipeline_name)
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
        settings.home,
        pipeline.name,
        previous.version,
        "rollback",
        expect_from=last.to_version,
        actor=actor,
    )
