"""Shared fixtures: a fresh embedded broker per test, one SparkSession per test session.

Tests never write into the working tree: every platform home is a pytest tmp_path.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from kappa.broker import EmbeddedBroker
from kappa.settings import Settings, load_settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_settings(home: Path, broker_port: int | None = None, **overrides: object) -> Settings:
    port = broker_port or free_port()
    values = {
        "home": str(home),
        "broker.port": port,
        "kafka.bootstrap_servers": f"127.0.0.1:{port}",
        "spark.master": "local[2]",
        "dagster.port": free_port(),
        # Durability is not what most tests are about: the memory engine starts in milliseconds.
        "broker.storage": "memory",
        "object_store.port": free_port(),
        **overrides,
    }
    return load_settings(env={}, overrides=values)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings with a private home and a private (not yet started) broker port."""
    return make_settings(tmp_path / "home")


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
def spark():  # type: ignore[no-untyped-def]
    from streaming.spark_session import build_spark_session

    session = build_spark_session("local[2]", {"spark.ui.showConsoleProgress": "false"})
    yield session
    session.stop()
