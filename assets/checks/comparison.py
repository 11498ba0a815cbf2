"""A candidate version's comparison with the live version, as blocking asset checks.

Three checks on each table: ``candidate_schema`` (columns and types), ``candidate_keys`` (key
coverage, no duplicated keys) and ``candidate_values`` (per-column match rates). They are blocking
and carry the Great Expectations numbers and a link to the Data Docs page. They run from the UI
("Execute checks", optionally with a version), and every comparison the promotion job or the
candidate sensor runs reports them too, so the checks tab shows why a promotion was refused.
"""

# No `from __future__ import annotations`: Dagster inspects the check function's annotations.

from collections.abc import Iterable
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    Config,
    MetadataValue,
    multi_asset_check,
)
from pydantic import Field

from assets.checks.quality import docs_link
from assets.resources import KappaSettings, KappaSpark
from quality.comparison import GROUPS, KEYS, SCHEMA, VALUES
from streaming.define.pipeline import Pipeline
from streaming.settings import Settings

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


def comparison_evaluations(
    key: AssetKey, settings: Settings, result: Any
) -> list[AssetCheckEvaluation]:
    """The three checks as events a job (promotion, sensor-launched comparison) can log."""
    return [
        AssetCheckEvaluation(
            asset_key=key,
            check_name=name,
            passed=passed,
            severity=AssetCheckSeverity.ERROR,
            description=text,
            metadata=metadata,
            blocking=True,
        )
        for name, passed, text, metadata in check_outcomes(settings, result)
    ]


class ComparisonCheckConfig(Config):
    version: str | None = Field(
        default=None, description="candidate version (default: the pipeline's declared version)"
    )
    wait_s: float = Field(
        default=0.0, description="seconds to wait for the candidate to reach the live position"
    )


def comparison_checks(key: AssetKey, pipeline: Pipeline) -> AssetChecksDefinition:
    specs = [
        AssetCheckSpec(check_name(g), asset=key, blocking=True, description=DESCRIPTIONS[g])
        for g in GROUPS
    ]

    @multi_asset_check(specs=specs, name=f"{pipeline.name}_candidate_comparison")
    def _compare(
        context: AssetCheckExecutionContext,
        config: ComparisonCheckConfig,
        kappa: KappaSettings,
        spark: KappaSpark,
    ):
        from streaming.versions.promotion import compare_with_live

        settings = kappa.load()
        version = config.version or pipeline.version
        result = compare_with_live(
            settings, pipeline.name, version, config.wait_s or None, lambda: spark.spark_session
        )
        for name, passed, text, metadata in check_outcomes(settings, result):
            yield AssetCheckResult(
                check_key=AssetCheckKey(key, name),
                passed=passed,
                severity=AssetCheckSeverity.ERROR,
                description=text,
                metadata=metadata,
            )

    return _compare
