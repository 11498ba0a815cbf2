"""Shared fixtures: one Apache Kafka broker and one SparkSession per test process.

The broker starts once per pytest process (each xdist worker has its own) and is emptied before
every test that asks for it, so a test sees only its own topics. Tests that stop, kill or restart
a broker start their own on private ports (the ``settings`` fixture gives them free ones).
Tests never write into the working tree: every platform home is a pytest tmp_path.

Long files run beside short ones. A file marked ``slow(seconds=N)`` takes about N seconds on a
quiet machine; files are collected longest first, and under ``--dist loadfile`` one worker takes
them from the front and the other from the back (``tests/support/heavy_and_light.py``), so two
whole-platform scenarios do not slow each other down (``make test`` turns off xdist's own
reordering, by test count).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.support.broker import delete_topics
from bench.support.settings import private_settings
from kappa.broker import EmbeddedBroker
from streaming.engine.client import stop_engine
from streaming.settings import Settings


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.support.heavy_and_light import HeavyAndLight

    return HeavyAndLight(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest files first; files of equal cost (most are unmarked) keep their collected order."""
    cost: dict[Path, float] = {}
    for item in items:
        declared = [m.kwargs.get("seconds", 0) for m in item.iter_markers("slow")]
        cost[item.path] = max([cost.get(item.path, 0.0), *declared])
    items.sort(key=lambda item: -cost[item.path])


@pytest.fixture(scope="session")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """The Kafka broker of this test process, started on first use."""
    embedded = EmbeddedBroker(private_settings(tmp_path_factory.mktemp("kafka") / "home"))
    embedded.start()
    try:
        yield embedded
    finally:
        embedded.stop()


@pytest.fixture
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """Settings with a private home. With the ``broker`` fixture they point at the shared broker;
    without it, at private (not yet started) broker ports.

    A deployment run in the test's own process (Dagster's ``materialize``, a deploy op) starts
    the home's engine as a child of the pytest worker, where nothing else would stop it: it is
    stopped when the test ends."""
    if "broker" not in request.fixturenames:
        configured = private_settings(tmp_path / "home")
    else:
        shared: EmbeddedBroker = request.getfixturevalue("shared_broker")
        ports = shared.settings.broker
        configured = private_settings(
            tmp_path / "home", ports.port, controller_port=ports.controller_port
        )
    yield configured
    stop_engine(configured.home)


@pytest.fixture
def broker(shared_broker: EmbeddedBroker, settings: Settings) -> EmbeddedBroker:
    """The shared broker, with no topic left from an earlier test."""
    delete_topics(settings.kafka.client_config())
    return shared_broker


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One SparkSession for the whole test session, with the platform's settings."""
    from streaming.spark.session import build_spark_session

    home = tmp_path_factory.mktemp("spark-home")
    session = build_spark_session(private_settings(home), app_name="kappa-tests")
    yield session
    session.stop()
