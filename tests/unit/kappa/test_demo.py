"""The demo producer's batching follows the producer settings."""

from __future__ import annotations

from bench.support.settings import private_settings
from kappa.demo import producer_config


def test_demo_producer_batches_by_the_configured_linger(tmp_path):
    settings = private_settings(tmp_path / "home", **{"producer.linger_ms": 2500})
    config = producer_config(settings)

    assert config["linger.ms"] == "2500"
    assert int(config["message.timeout.ms"]) > 2500  # librdkafka refuses less than the linger


def test_the_demo_producer_loses_nothing_it_was_told_was_written(tmp_path):
    """Acknowledged by every in-sync replica and idempotent: a retried send is written once."""
    config = producer_config(private_settings(tmp_path / "home"))

    assert (config["acks"], config["enable.idempotence"]) == ("all", "true")
