"""A candidate version's comparison with the live version, as blocking asset checks on the
candidate's partition.

Three checks on each table: ``candidate_schema`` (columns and types), ``candidate_keys`` (key
coverage, no duplicated keys) and ``candidate_values`` (per-column match rates). They are blocking
and carry the Great Expectations numbers and a link to the Data Docs page. They run from the UI
("Execute" on a version's partition), and every comparison the promotion job runs reports them
too, on the candidate's partition: a candidate never materializes (it does not serve), so its
verdict stays the one shown until a newer comparison replaces it. A version that is not a
candidate (live, retained) has nothing to compare: its checks say so and pass.
"""

# No `from __future__ import annotations`: Dagster inspects the check function's annotations.

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    Config,
    DagsterInstance,
    MetadataValue,
    multi_asset_check,
)
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from pydantic import Field

from assets.checks.quality import docs_link
from assets.partitions import check_target, version_partitions
from assets.refusals import refusing
from assets.resources import KappaSettings, KappaSpark
from quality.comparison import GROUPS, KEYS, SCHEMA, VALUES
from streaming.define.pipeline import Pipeline
from streaming.deployment import Deployment
from streaming.settings import Settings
from streaming.versions.state import PipelineVersions, Role, pipeline_versions

DESCRIPTIONS = {
    SCHEMA: "Candidate vs live at equal input offsets: same columns and types, except declared "
    "changes.",
    KEYS: "Candidate vs live at equal input offsets: keys present in both (>= the pipeline's "
    "threshold), no duplicated keys.",
    VALUES: "Candidate vs live at equal input offsets: per-column match rate for keys in both "
    "(>= the pipeline's threshold), except declared changes.",
}


def check_name(group: str) -> str:
    """The asset check that shows one group of a comparison's outcomes."""
    return f"candidate_{group}"


def _metadata(result: Any, group: str, at: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = dict(result.group_metadata(group))
    if result.mismatches and group == VALUES:
        metadata["top_mismatches"] = MetadataValue.md(_mismatch_table(result))
    if at:
        metadata["at_offsets"] = MetadataValue.json(at.get("offsets", {}))
    if result.docs_page:
        metadata["data_docs"] = docs_link(result.docs_page)
    return metadata


def _mismatch_table(result: Any) -> str:
    rows = ["| key | column | old | new |", "|---|---|---|---|"]
    for row in result.mismatches[:10]:
        for diff in row.diffs:
            rows.append(f"| {row.key} | {diff.column} | {diff.old} | {diff.new} |")
    return "\n".join(rows)


def check_outcomes(settings: Settings, result: Any) -> Iterable[tuple[str, bool, str, dict]]:
    """(check name, passed, description, metadata) for each of the three checks."""
    from quality.diff_checks import failure_reasons
    from streaming.versions.promotion import comparison_offsets

    at = comparison_offsets(settings, result.table, result.old_name, result.new_name)
    for group in GROUPS:
        failed = tuple(o for o in result.outcomes if o.group == group and not o.success)
        reasons = failure_reasons(result, failed) if failed else ()
        text = f"{result.new_name} vs live {result.old_name}: " + (
            "; ".join(reasons) if reasons else "passed"
        )
        yield check_name(group), not failed, text, _metadata(result, group, at)


def refusal_evidence(settings: Settings, result: Any) -> dict[str, Any]:
    """The numbers behind a refused promotion: the failed checks' metadata."""
    evidence: dict[str, Any] = {}
    failed = []
    for name, passed, _text, metadata in check_outcomes(settings, result):
        if not passed:
            failed.append(name)
            evidence.update(metadata)
    return {"failed_checks": ", ".join(failed), **evidence}


def comparison_evaluations(
    instance: DagsterInstance, key: AssetKey, settings: Settings, result: Any
) -> list[AssetCheckEvaluation]:
    """The three checks, on the candidate's partition, as events a job (the promotion) logs."""
    version = result.new_name
    target = check_target(instance, key, version)
    return [
        _verdict(key, name, version, target, passed, text, metadata)
        for name, passed, text, metadata in check_outcomes(settings, result)
    ]


def _verdict(
    key: AssetKey,
    name: str,
    version: str,
    target: Any,
    passed: bool,
    description: str,
    metadata: Mapping[str, Any],
) -> AssetCheckEvaluation:
    """A blocking comparison check's evaluation on the candidate's partition."""
    return AssetCheckEvaluation(
        asset_key=key,
        check_name=name,
        passed=passed,
        severity=AssetCheckSeverity.ERROR,
        description=description,
        metadata=metadata,
        blocking=True,
        partition=version,
        target_materialization_data=target,
    )


def not_a_candidate(versions: PipelineVersions, version: str) -> str | None:
    """Why ``version`` has nothing to compare (it is live or was), or None for a candidate."""
    state = versions.state(version)
    if state.role == Role.CANDIDATE:
        return None
    made_live = [s for s in versions.switches if s.to_version == version]
    how = ""
    if made_live:
        last = made_live[-1]
        at = datetime.fromtimestamp(last.at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        how = f" (made live {at}: {last.reason})"
    return f"{version} is {state.role}, not a candidate: nothing to compare{how}"


def planned_gate_checks(context: AssetExecutionContext) -> list[str]:
    """The comparison checks a run planned on its asset: a run from the asset page plans every
    check of the asset, a deploy-job run none."""
    planned = {
        k.name for k in context.run.asset_check_selection or () if k.asset_key == context.asset_key
    }
    return [check_name(g) for g in GROUPS if check_name(g) in planned]


CARRIED = " (the last comparison, carried over)"


def settled_gate_evaluations(
    context: AssetExecutionContext, settings: Settings, deployment: Deployment, names: list[str]
) -> list[AssetCheckEvaluation]:
    """The comparison checks ``names`` a deployment run planned, settled (or they would show "in
    progress" for the deployment's lifetime, then "skipped", hiding the last verdict).

    A version that is not a candidate has nothing to compare: they pass, saying why. A candidate
    keeps its last verdict, carried over as it was (none yet: they stay planned).
    """
    reason = not_a_candidate(pipeline_versions(settings, deployment.pipeline), deployment.version)
    target = check_target(context.instance, context.asset_key, deployment.version)
    settled = []
    for name in names:
        if reason is not None:
            passed, description, metadata = True, reason, {}
        else:
            last = last_verdict(
                context.instance, AssetCheckKey(context.asset_key, name), deployment.version
            )
            if last is None:
                return []
            passed = last.passed
            description = (last.description or "").removesuffix(CARRIED) + CARRIED
            metadata = dict(last.metadata)
        settled.append(
            _verdict(
                context.asset_key, name, deployment.version, target, passed, description, metadata
            )
        )
    return settled


def last_verdict(
    instance: DagsterInstance, check_key: AssetCheckKey, version: str
) -> AssetCheckEvaluation | None:
    """The version's latest completed evaluation of a comparison check, if any."""
    records = instance.event_log_storage.get_asset_check_execution_history(
        check_key,
        limit=1,
        status={AssetCheckExecutionRecordStatus.SUCCEEDED, AssetCheckExecutionRecordStatus.FAILED},
        partition_filter=PartitionKeyFilter(key=version),
    )
    if not records or records[0].event is None or records[0].event.dagster_event is None:
        return None
    return records[0].event.dagster_event.event_specific_data  # type: ignore[return-value]


def deploys_the_table(asset_selection: AbstractSet[AssetKey] | None, key: AssetKey) -> bool:
    """Whether a run materializes the table: a deployment (the asset page's Materialize plans
    every check of the asset). Such a run never compares: a candidate's comparison belongs to the
    promotion, and one run at the end of an until_caught_up deployment would fail it or replace
    the candidate's last verdict with a comparison at arbitrary offsets."""
    return bool(asset_selection) and key in asset_selection  # type: ignore[operator]


class ComparisonCheckConfig(Config):
    wait_s: float = Field(
        default=0.0, description="seconds to wait for the candidate to reach the live position"
    )


def comparison_checks(key: AssetKey, pipeline: Pipeline) -> AssetChecksDefinition:
    partitions = version_partitions(pipeline.name)
    specs = [
        AssetCheckSpec(
            check_name(g),
            asset=key,
            blocking=True,
            description=DESCRIPTIONS[g],
            partitions_def=partitions,
        )
        for g in GROUPS
    ]

    # can_subset: a run that deploys the table yields none of them (see deploys_the_table), and
    # the UI may execute one of the three alone.
    @multi_asset_check(specs=specs, name=f"{pipeline.name}_candidate_comparison", can_subset=True)
    def _compare(
        context: AssetCheckExecutionContext,
        config: ComparisonCheckConfig,
        kappa: KappaSettings,
        spark: KappaSpark,
    ):
        from streaming.versions.promotion import compare_with_live

        if deploys_the_table(context.run.asset_selection, key):
            context.log.info(
                "not comparing: this run deploys the table (comparing is the promotion's job, "
                "or Execute on a candidate's checks)"
            )
            return
        selected = context.selected_asset_check_keys
        settings = kappa.load()
        version = context.partition_key
        reason = not_a_candidate(pipeline_versions(settings, pipeline.name), version)
        if reason is not None:
            for group in GROUPS:
                check_key = AssetCheckKey(key, check_name(group))
                if check_key in selected:
                    yield AssetCheckResult(check_key=check_key, passed=True, description=reason)
            return
        with refusing():
            result = compare_with_live(
                settings, pipeline.name, version, config.wait_s or None, lambda: spark.spark_session
            )
        for name, passed, text, metadata in check_outcomes(settings, result):
            if AssetCheckKey(key, name) not in selected:
                continue
            yield AssetCheckResult(
                check_key=AssetCheckKey(key, name),
                passed=passed,
                severity=AssetCheckSeverity.ERROR,
                description=text,
                metadata=metadata,
            )

    return _compare
