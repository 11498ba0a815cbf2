"""Shared fixtures: a fresh embedded broker per test, one SparkSession per test session.

Tests never write into the working tree: every platform home is a pytest tmp_path.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kappa.broker import EmbeddedBroker
from kappa.testing.settings import private_settings
from streaming.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings with a private home and a private (not yet started) broker port."""
    return private_settings(tmp_path / "home")


@pytest.fixture
def broker(settings: Settings) -> Iterator[EmbeddedBroker]:
    """A fresh, empty embedded broker for one test."""
    embedded = EmbeddedBroker(settings)
    embedded.start()
    try:
        yield embedded
    finally:
        embedded.stop()


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One SparkSession for the whole test session, with the platform's settings."""
    from streaming.run.spark_session import build_spark_session

    home = tmp_path_factory.mktemp("spark-home")
    session = build_spark_session(private_settings(home).spark, app_name="kappa-tests")
    yield session
    session.stop()
