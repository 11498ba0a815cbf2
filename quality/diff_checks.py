"""The Great Expectations checks of a diff frame, and the reasons when they fail.

GE's cross-table expectations are SQL-only, so the verdict on a new version is expressed on
the diff frame (:mod:`quality.diff_frame`): its column set (the schema), the type of each new
column, ``_old_rows``/``_new_rows`` at most 1 (each side compacted), ``_old_key_in_new`` and
``_new_key_in_old`` true for ``mostly`` of the keys (coverage), and
``ExpectColumnPairValuesToBeEqual(old__c, new__c)`` on keys in both versions (values). Each
check carries its group (schema, keys or values), and so does its outcome.
"""

from __future__ import annotations

from quality.comparison import KEYS, SCHEMA, VALUES, ComparisonResult, SchemaDiff
from quality.diff_frame import NEW, OLD, STATUS, DiffPlan
from quality.errors import SpecError
from quality.formatting import pct
from quality.gx_runner import Check
from quality.outcomes import ExpectationOutcome, spark_type_outcome
from quality.rules import ComparisonPolicy
from quality.spark_types import gx_type_class

FLAGS = ("_old_rows", "_new_rows", STATUS, "_old_key_in_new", "_new_key_in_old")


def diff_checks(plan: DiffPlan, policy: ComparisonPolicy, old_types: dict[str, str]) -> list[Check]:
    """The GE checks of the diff frame: schema, compaction, key coverage, values.

    Args:
        plan: the diff frame's columns.
        policy: thresholds and declared changes.
        old_types: old's column types (Spark simple strings), for the type checks of new.
    """
    declared = policy.expected_changed_columns
    expected_new = [c for c in plan.old_columns if c not in declared]
    expected_new += [c for c in plan.new_columns if c in declared]
    column_set = [plan.key, *(OLD + c for c in plan.old_columns)]
    column_set += [NEW + c for c in expected_new] + list(FLAGS)
    overlap = policy.min_key_overlap
    checks = [
        Check(
            "columns",
            "new has the old columns, except declared changes",
            "ExpectTableColumnsToMatchSet",
            {"column_set": column_set, "exact_match": True},
            group=SCHEMA,
        ),
        Check(
            "unique_old",
            "each key at most once in old",
            "ExpectColumnValuesToBeBetween",
            {"column": "_old_rows", "max_value": 1},
            group=KEYS,
        ),
        Check(
            "unique_new",
            "each key at most once in new",
            "ExpectColumnValuesToBeBetween",
            {"column": "_new_rows", "max_value": 1},
            group=KEYS,
        ),
        Check(
            "old_keys_in_new",
            "old keys present in new",
            "ExpectColumnValuesToBeInSet",
            {"column": "_old_key_in_new", "value_set": [True], "mostly": overlap},
            group=KEYS,
        ),
        Check(
            "new_keys_in_old",
            "new keys present in old",
            "ExpectColumnValuesToBeInSet",
            {"column": "_new_key_in_old", "value_set": [True], "mostly": overlap},
            group=KEYS,
        ),
    ]
    for column in plan.new_columns:
        class_name = gx_class(old_types[column]) if column in old_types else None
        if class_name and column not in declared:
            checks.append(
                Check(
                    f"type({column})",
                    f"{column} is still {class_name}",
                    "ExpectColumnValuesToBeOfType",
                    {"column": NEW + column, "type_": class_name},
                    group=SCHEMA,
                )
            )
    for column in plan.compared:
        mostly = 0.0 if column in declared else policy.min_column_match
        checks.append(
            Check(
                f"match({column})",
                f"{column} equal in old and new",
                "ExpectColumnPairValuesToBeEqual",
                {
                    "column_A": OLD + column,
                    "column_B": NEW + column,
                    "mostly": mostly,
                    "ignore_row_if": "neither",
                },
                where=(STATUS, "both"),
                group=VALUES,
            )
        )
    return checks


def gx_class(type_string: str) -> str | None:
    """GE's Spark type class for a type, None for types it has no class for."""
    try:
        return gx_type_class(type_string)
    except SpecError:
        return None


def exact_type_failures(
    schema: SchemaDiff, policy: ComparisonPolicy, key: str
) -> tuple[ExpectationOutcome, ...]:
    """Failed checks for type changes GE's class-level check cannot see.

    Those are changes within a class (decimal precision), of types GE has no class for, and
    of the key (the diff frame merges both sides' key into one column).
    """
    outcomes = []
    for change in schema.type_changed:
        if change.column in policy.expected_changed_columns:
            continue
        old_class, new_class = gx_class(change.old_type), gx_class(change.new_type)
        if change.column != key and old_class and new_class and old_class != new_class:
            continue
        description = f"{change.column} is still {change.old_type}"
        outcomes.append(
            spark_type_outcome(
                change.column, change.old_type, change.new_type, description, group=SCHEMA
            )
        )
    return tuple(outcomes)


def failure_reasons(
    result: ComparisonResult, outcomes: tuple[ExpectationOutcome, ...]
) -> tuple[str, ...]:
    """One human-readable reason, with its numbers, per failed check."""
    policy, cov, new, old = result.policy, result.coverage, result.new_name, result.old_name
    declared = policy.expected_changed_columns
    messages: list[str] = []
    for outcome in (o for o in outcomes if not o.success):
        name, keys = outcome.name, ", ".join(outcome.unexpected_keys[:3])
        example = f"; e.g. keys {keys}" if keys else ""
        if outcome.error:
            messages.append(outcome.reason())
        elif name == "columns":
            removed = [c for c in result.schema_diff.removed if c not in declared]
            added = [c for c in result.schema_diff.added if c not in declared]
            hint = " (a rename?)" if removed and added else ""
            removed_text, added_text = ", ".join(removed) or "none", ", ".join(added) or "none"
            messages.append(
                f"schema: removed {removed_text}; added {added_text}{hint}; "
                "declare them in expected_changed_columns if intended"
            )
        elif name.startswith(("type(", "spark_type(")):
            column = name[name.index("(") + 1 : -1]
            change = next((t for t in result.schema_diff.type_changed if t.column == column), None)
            if change is None:
                messages.append(outcome.reason())
                continue
            messages.append(
                f"column {change.column} changed type {change.old_type} -> {change.new_type}; "
                "declare it in expected_changed_columns if intended"
            )
        elif name in ("unique_old", "unique_new"):
            side = name.removeprefix("unique_")
            dup_keys = getattr(cov, f"{side}_duplicate_keys")
            dup_rows = getattr(cov, f"{side}_duplicate_rows")
            messages.append(
                f"{old if side == 'old' else new} has {dup_keys} duplicated keys ({dup_rows} extra "
                f"rows): the table is not compacted{example}"
            )
        elif name == "old_keys_in_new":
            messages.append(
                f"{new} lacks {outcome.unexpected_count} of {outcome.checked_count} keys of {old} "
                f"({pct(1 - (outcome.pass_rate or 0))}), needs >= {pct(outcome.mostly)} kept; "
                f"declare drops in expected_dropped_keys{example}"
            )
        elif name == "new_keys_in_old":
            messages.append(
                f"{new} has {outcome.unexpected_count} of {outcome.checked_count} keys not in "
                f"{old} ({pct(1 - (outcome.pass_rate or 0))}), needs >= {pct(outcome.mostly)} "
                f"known; declare them in expected_added_keys{example}"
            )
        elif name.startswith("match("):
            match = result.column(name[len("match(") : -1])
            messages.append(
                f"column {match.column} matches for {pct(outcome.pass_rate)} of keys "
                f"({match.mismatched} differ), needs >= {pct(outcome.mostly)}{example}"
            )
        else:
            messages.append(outcome.reason())
    return tuple(messages)
