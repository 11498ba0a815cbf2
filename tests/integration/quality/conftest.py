"""Fixtures of the quality tests: the live customers table (``spark`` is the root fixture).

The test modules are named ``test_quality_*`` and this folder has no ``__init__.py``: as a
package it would be imported as ``quality`` and shadow the package under test. Shared data
helpers are in ``quality_testdata``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.integration.quality.testdata import customers_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@pytest.fixture(scope="session")
def customers(spark: SparkSession) -> Iterator[DataFrame]:
    """The live version of the customers table, cached for the whole session."""
    df = customers_frame(spark).cache()
    df.count()
    yield df
    df.unpersist()
