"""Deterministic test data of the quality tests (shared by conftest and the test modules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from quality import ISO_3166_ALPHA2, InSet, MatchesRegex, NotInFuture, NotNull, TableSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

N_KEYS = 10_000
NOW_MS = 1_700_000_000_000 + N_KEYS * 1_000
COUNTRIES = ("DE", "FR", "GB", "US", "NL")

CUSTOMERS_SCHEMA = {
    "customer_id": "string",
    "name": "string",
    "email": "string",
    "country": "string",
    "updated_at": "bigint",
    "partition": "int",
    "offset": "bigint",
}
CUSTOMERS = TableSpec(
    name="customers",
    key="customer_id",
    schema=CUSTOMERS_SCHEMA,
    rules=(
        NotNull("email"),
        MatchesRegex("email", r"^[^@\s]+@[^@\s]+$"),
        InSet("country", sorted(ISO_3166_ALPHA2)),
        NotInFuture("updated_at", tolerance_ms=60_000),
    ),
)


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
