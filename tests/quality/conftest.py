"""Fixtures of the quality tests: one SparkSession and deterministic customers tables.

The test modules are named ``test_quality_*`` and this folder has no ``__init__.py``: as a
package it would be imported as ``quality`` and shadow the package under test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

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


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The one SparkSession of the test session (about 5 s and 1 GB to start)."""
    from streaming.spark_session import build_spark_session

    session = build_spark_session("local[2]", {"spark.ui.showConsoleProgress": "false"})
    yield session
    session.stop()


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


@pytest.fixture(scope="session")
def customers(spark: SparkSession) -> Iterator[DataFrame]:
    """The live version of the customers table, cached for the whole session."""
    df = customers_frame(spark).cache()
    df.count()
    yield df
    df.unpersist()
