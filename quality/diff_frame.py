"""The diff DataFrame of two table versions, and the statistics taken from it.

Each side is reduced to one row per key with the key's row count (a window over the key, so a
broken compaction shows up as a count above 1 instead of multiplying join rows), then the sides
are full-outer-joined on the key, null keys matching each other. The window's shuffle and sort
are the join's too: one exchange and one sort per side. One row per key in either version:

==========================  ================================================================
``<key>``                   the key
``old__<c>``, ``new__<c>``  each side's value of column ``c`` (null when the key is absent)
``_old_rows``/``_new_rows``  rows with this key on each side (null when absent)
``_status``                 ``"both"``, ``"only_old"`` or ``"only_new"``
``_old_key_in_new``         for old keys not declared dropped: is the key in new? (else null)
``_new_key_in_old``         for new keys not declared added: is the key in old? (else null)
==========================  ================================================================

Statistics come from one aggregate pass (:func:`aggregate`); examples from two small
ordered takes on rows that differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from quality.comparison import MismatchRow, NumericShift, ValueDiff
from quality.formatting import jsonable

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

OLD, NEW = "old__", "new__"
STATUS = "_status"
PERCENTILES = (0.5, 0.9, 0.99)
ACCURACY = 1_000  # approx_percentile: rank error at most 1/1000 of the rows, and 2x faster


@dataclass(frozen=True)
class DiffPlan:
    """Which columns the diff frame carries and which are compared.

    Attributes:
        key: the key column.
        old_columns: old's non-key, non-ignored columns; likewise ``new_columns``.
        compared: shared columns of the same type, compared value by value.
        numeric: shared columns numeric on both sides, whose distributions are reported.
        dropped_keys: keys (as strings) that may be absent from new.
        added_keys: keys (as strings) that may be absent from old.
    """

    key: str
    old_columns: tuple[str, ...]
    new_columns: tuple[str, ...]
    compared: tuple[str, ...]
    numeric: tuple[str, ...]
    dropped_keys: frozenset[str] = frozenset()
    added_keys: frozenset[str] = frozenset()


def _join_key(df: DataFrame, key: str) -> tuple[Column, Column]:
    """The key with nulls replaced by a stand-in, and a null flag: equal pairs mean equal keys.

    Joining on them (rather than on ``key <=> key``, which Spark rewrites into other
    expressions) keeps the join keys the window's partitioning keys, so the sort-merge join
    reuses each side's shuffle and sort. Keys of types other than string, numeric and boolean
    join on their value: null keys of those types do not match each other.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, NumericType, StringType

    dtype = df.schema[key].dataType
    value = F.col(key)
    if isinstance(dtype, StringType):
        value = F.coalesce(value, F.lit(""))
    elif isinstance(dtype, NumericType | BooleanType):
        value = F.coalesce(value, F.lit(0).cast(dtype))
    return value, F.col(key).isNull()


def _side(df: DataFrame, key: str, columns: tuple[str, ...], prefix: str, rows: str) -> DataFrame:
    """One row per key (an arbitrary one of duplicates) with the key's row count."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    value, is_null = _join_key(df, key)
    keyed = df.select(
        value.alias(f"{prefix}_jk"),
        is_null.alias(f"{prefix}_jn"),
        *(F.col(c).alias(f"{prefix}{c}") for c in columns),
    )
    part = [f"{prefix}_jk", f"{prefix}_jn"]
    window = Window.partitionBy(*part).orderBy(*part)
    whole = window.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    return (
        keyed.withColumn(rows, F.count(F.lit(1)).over(whole))
        .withColumn("_n", F.row_number().over(window))
        .filter(F.col("_n") == 1)
        .drop("_n")
    )


def _declared(key: Column, keys: frozenset[str]) -> Column:
    from pyspark.sql import functions as F

    return key.cast("string").isin(sorted(keys)) if keys else F.lit(False)


def build_diff_frame(old: DataFrame, new: DataFrame, plan: DiffPlan) -> DataFrame:
    """The joined per-key diff frame described in the module docstring (not cached)."""
    from pyspark.sql import functions as F

    key = plan.key
    o = _side(old, key, plan.old_columns, OLD, "_old_rows")
    n = _side(new, key, plan.new_columns, NEW, "_new_rows")
    on = (o[f"{OLD}_jk"] == n[f"{NEW}_jk"]) & (o[f"{OLD}_jn"] == n[f"{NEW}_jn"])
    joined = o.join(n, on, "full_outer")
    in_old, in_new = F.col("_old_rows").isNotNull(), F.col("_new_rows").isNotNull()
    # The join key is the key itself, or a stand-in when the key is null (the flag says so).
    is_null = F.coalesce(F.col(f"{OLD}_jn"), F.col(f"{NEW}_jn"))
    key_col = F.when(~is_null, F.coalesce(F.col(f"{OLD}_jk"), F.col(f"{NEW}_jk")))
    status = F.when(in_old & in_new, "both").when(in_old, "only_old").otherwise("only_new")
    return joined.select(
        key_col.alias(key),
        *(F.col(f"{OLD}{c}") for c in plan.old_columns),
        *(F.col(f"{NEW}{c}") for c in plan.new_columns),
        "_old_rows",
        "_new_rows",
        status.alias(STATUS),
        F.when(in_old & ~_declared(key_col, plan.dropped_keys), in_new).alias("_old_key_in_new"),
        F.when(in_new & ~_declared(key_col, plan.added_keys), in_old).alias("_new_key_in_old"),
    )


def _equal(column: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(f"{OLD}{column}").eqNullSafe(F.col(f"{NEW}{column}"))


def aggregate(diff: DataFrame, plan: DiffPlan) -> dict[str, Any]:
    """Coverage counts, duplicates, per-column matches and distributions in one Spark job."""
    from pyspark.sql import functions as F

    both = F.col(STATUS) == "both"

    def count_if(condition: Column) -> Column:
        return F.coalesce(F.sum(F.when(condition, 1).otherwise(0)), F.lit(0))

    def total(column: str) -> Column:
        return F.coalesce(F.sum(column), F.lit(0))

    aggs = [
        count_if(both).alias("in_both"),
        count_if(F.col(STATUS) == "only_old").alias("only_old"),
        count_if(F.col(STATUS) == "only_new").alias("only_new"),
        count_if((F.col(STATUS) == "only_old") & F.col("_old_key_in_new").isNull()).alias(
            "dropped_expected"
        ),
        count_if((F.col(STATUS) == "only_new") & F.col("_new_key_in_old").isNull()).alias(
            "added_expected"
        ),
    ]
    for side in ("old", "new"):
        rows = F.col(f"_{side}_rows")
        aggs += [
            total(f"_{side}_rows").alias(f"{side}_rows"),
            F.count(rows).alias(f"{side}_keys"),
            count_if(rows > 1).alias(f"{side}_duplicate_keys"),
            F.coalesce(F.sum(F.when(rows > 1, rows - 1)), F.lit(0)).alias(f"{side}_duplicate_rows"),
        ]
    for i, column in enumerate(plan.compared):
        aggs.append(count_if(both & _equal(column)).alias(f"match_{i}"))
    for i, column in enumerate(plan.numeric):
        for prefix in (OLD, NEW):
            value = F.col(f"{prefix}{column}").cast("double")
            aggs += [
                F.avg(value).alias(f"mean_{prefix}{i}"),
                F.percentile_approx(value, list(PERCENTILES), ACCURACY).alias(f"pct_{prefix}{i}"),
            ]
    return diff.agg(*aggs).first().asDict()


def distributions(stats: dict[str, Any], plan: DiffPlan) -> tuple[NumericShift, ...]:
    """The numeric shifts out of :func:`aggregate`'s row."""
    shifts = []
    for i, column in enumerate(plan.numeric):
        values: dict[str, float | None] = {}
        for prefix, side in ((OLD, "old"), (NEW, "new")):
            values[f"{side}_mean"] = stats[f"mean_{prefix}{i}"]
            quantiles = stats[f"pct_{prefix}{i}"] or [None] * len(PERCENTILES)
            for p, q in zip((50, 90, 99), quantiles, strict=True):
                values[f"{side}_p{p}"] = q
        shifts.append(NumericShift(column=column, **values))
    return tuple(shifts)


def example_keys(diff: DataFrame, key: str, limit: int = 5) -> dict[str, tuple[str, ...]]:
    """Up to ``limit`` keys per one-sided status, undeclared ones first, then by key."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    declared = F.coalesce(F.col("_old_key_in_new"), F.col("_new_key_in_old")).isNull()
    window = Window.partitionBy(STATUS).orderBy(declared.asc(), F.col(key).asc_nulls_first())
    rows = (
        diff.filter(F.col(STATUS) != "both")
        .select(
            STATUS, F.col(key).cast("string").alias("k"), F.row_number().over(window).alias("n")
        )
        .filter(F.col("n") <= limit)
        .collect()
    )
    found: dict[str, list[str]] = {"only_old": [], "only_new": []}
    for row in sorted(rows, key=lambda r: r["n"]):
        found[row[STATUS]].append("null" if row["k"] is None else row["k"])
    return {status: tuple(keys) for status, keys in found.items()}


def top_mismatches(
    diff: DataFrame, plan: DiffPlan, expected: frozenset[str], limit: int
) -> tuple[MismatchRow, ...]:
    """Keys in both versions with differing values: most undeclared differences first."""
    from pyspark.sql import functions as F

    if not plan.compared or limit <= 0:
        return ()
    differs = {c: (~_equal(c)).cast("int") for c in plan.compared}
    undeclared = [differs[c] for c in plan.compared if c not in expected] or [F.lit(0)]
    rows = (
        diff.filter((F.col(STATUS) == "both") & (sum(differs.values()) > 0))
        .select(
            F.col(plan.key).cast("string").alias("_key"),
            sum(undeclared).alias("_undeclared"),
            sum(differs.values()).alias("_differing"),
            *(F.col(f"{prefix}{c}") for c in plan.compared for prefix in (OLD, NEW)),
        )
        .orderBy(F.desc("_undeclared"), F.desc("_differing"), F.asc("_key"))
        .limit(limit)
        .collect()
    )
    result = []
    for row in rows:
        diffs = tuple(
            ValueDiff(column=c, old=jsonable(row[f"{OLD}{c}"]), new=jsonable(row[f"{NEW}{c}"]))
            for c in plan.compared
            if row[f"{OLD}{c}"] != row[f"{NEW}{c}"]
        )
        key = "null" if row["_key"] is None else row["_key"]
        result.append(MismatchRow(key=key, diffs=diffs))
    return tuple(result)
