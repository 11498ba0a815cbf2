"""Fixtures of the quality tests: one SparkSession and the live customers table.

The test modules are named ``test_quality_*`` and this folder has no ``__init__.py``: as a
package it would be imported as ``quality`` and shadow the package under test. Shared data
helpers are in ``quality_testdata``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from quality_testdata import customers_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The one SparkSession of the test session (about 5 s and 1 GB to start)."""
    from streaming.spark_session import build_spark_session

    session = build_spark_session("local[2]", {"spark.ui.showConsoleProgress": "false"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def customers(spark: SparkSession) -> Iterator[DataFrame]:
    """The live version of the customers table, cached for the whole session."""
    df = customers_frame(spark).cache()
    df.count()
    yield df
    df.unpersist()
