"""Deterministic test data of the quality tests (shared by conftest and the test modules).

The frame has the customers table's columns: the suites validate it against the spec the
customers pipeline declares, so the clean frame passing is also a check of that spec.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

N_KEYS = 10_000
NOW_MS = 1_700_000_000_000 + N_KEYS * 1_000
COUNTRIES = ("DE", "FR", "GB", "US", "NL")


def key_of(i: int) -> str:
    """The customer_id of row ``i`` of :func:`customers_frame`."""
    return f"c{i:05d}"


def customers_frame(spark: SparkSession, n: int = N_KEYS) -> DataFrame:
    """A customers table of ``n`` keys; ``offset`` equals the row number ``i``."""
    countries = ", ".join(f"'{c}'" for c in COUNTRIES)
    return spark.range(n).selectExpr(
        "format_string('c%05d', id) AS customer_id",
        "concat('Customer ', id) AS name",
        "concat('user', id, '@example.com') AS email",
        f"element_at(array({countries}), cast(id % {len(COUNTRIES)} + 1 AS int)) AS country",
        "1700000000000 + id * 1000 AS updated_at",
        "cast(id % 4 AS int) AS partition",
        "id AS offset",
    )
