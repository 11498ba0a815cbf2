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


# The heaviest files (several Spark JVMs, Dagster and a browser each): `make test` runs them one
# after another on one worker, never beside each other, while the other worker runs the rest.
HEAVY_FILES = frozenset(
    {
        "test_browser_reprocessing.py",
        "test_reprocessing_e2e.py",
        "test_faults.py",
        "test_restart.py",
        "test_deploy_from_asset_page.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The heavy files first, then the other files with a long scenario (marker ``slow``), each
    file's tests kept together: started first, the long ones never finish alone at the end while
    the other worker idles (`make test` keeps this order with ``--no-loadscope-reorder``)."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    first_seen = {path: i for i, path in reversed(list(enumerate(i.path for i in items)))}
    items.sort(
        key=lambda item: (
            item.path.name not in HEAVY_FILES,
            item.path not in slow,
            first_seen[item.path],
        )
    )


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Units of work for the workers: a file (its fixtures stay shared), or all the heavy files
    as one unit."""
    from xdist.scheduler import LoadScopeScheduling

    class FileOrHeavyScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "heavy" if path.rsplit("/", 1)[-1] in HEAVY_FILES else path

    return FileOrHeavyScheduling(config, log)
