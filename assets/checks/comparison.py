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
from streaming.define.pipeline import Pipeline
from streaming.settings import Settings

SCHEMA, KEYS, VALUES = "candidate_schema", "candidate_keys", "candidate_values"
DESCRIPTIONS = {
    SCHEMA: "Candidate vs live at equal input offsets: same columns and types, except declared "
    "changes.",
    KEYS: "Candidate vs live at equal input offsets: keys present in both (>= the pipeline's "
    "threshold), no duplicated keys.",
    VALUES: "Candidate vs live at equal input offsets: per-column match rate for keys in both "
    "(>= the pipeline's threshold), except declared changes.",
}
_SHARED = ("old", "new", "rows.old", "rows.new", "row_count_ratio", "elapsed_s")


def check_group(outcome_name: str) -> str:
    if outcome_name == "columns" or outcome_name.startswith(("type(", "spark_type(")):
        return SCHEMA
    if outcome_name.startswith(("unique_", "old_keys", "new_keys")):
        return KEYS
    return VALUES


def _group_metadata(
    result: Any, full: dict[str, Any], group: str, at: dict[str, Any]
) -> dict[str, Any]:
    metadata: dict[str, Any] = {k: full[k] for k in _SHARED if k in full}
    prefixes = {
        SCHEMA: ("schema.",),
        KEYS: ("keys.", "duplicate_keys.", "policy.min_key_overlap", "policy.expected_"),
        VALUES: ("match_rate.", "mean.", "p50.", "p90.", "p99.", "policy.min_column_match"),
    }[group]
    metadata.update({k: v for k, v in full.items() if k.startswith(prefixes)})
    for outcome in result.outcomes:
        if check_group(outcome.name) == group:
            metadata[f"expectation.{outcome.name}"] = "passed" if outcome.success else "FAILED"
            if outcome.unexpected_count is not None:
                metadata[f"unexpected.{outcome.name}"] = outcome.unexpected_count
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
    full = result.to_metadata()
    for group in (SCHEMA, KEYS, VALUES):
        outcomes = tuple(o for o in result.outcomes if check_group(o.name) == group)
        failed = tuple(o for o in outcomes if not o.success)
        reasons = failure_reasons(result, failed) if failed else ()
        passed = not failed
        text = f"{result.new_name} vs live {result.old_name}: " + (
            "; ".join(reasons) if reasons else "passed"
        )
        yield group, passed, text, _group_metadata(result, full, group, at)


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
        AssetCheckSpec(name, asset=key, blocking=True, description=DESCRIPTIONS[name])
        for name in (SCHEMA, KEYS, VALUES)
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
