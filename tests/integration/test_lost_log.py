"""`kappa up` on a broker that lost its log: one clear message, exit 3, nothing deleted; then
`kappa reset` deletes the derived state only once confirmed."""

from __future__ import annotations

import shutil

import pytest

from bench.support.producing import customer_changes, send
from kappa.broker import EmbeddedBroker
from kappa.log_check import EXIT_LOG_LOST, find_shortfalls
from streaming.deployment import Deployment
from tests.integration.helpers import kappa, run_until_caught_up

pytestmark = pytest.mark.integration


def test_up_on_a_broker_whose_log_was_wiped_says_so_once_and_deletes_nothing(spark, settings):
    broker = EmbeddedBroker(settings)
    broker.start()
    try:
        send(settings, customer_changes(600, seed=21))
        run_until_caught_up(spark, settings, "customers")
    finally:
        broker.stop()
    shutil.rmtree(settings.home.broker_data)  # the broker starts again with an empty log
    deployment = Deployment("customers", "v1", settings.home)
    state = [deployment.table_path, deployment.checkpoint_path]

    up = kappa(settings, "up", "--no-producer")

    assert up.returncode == EXIT_LOG_LOST, up.stdout + up.stderr
    assert up.stderr.count("is shorter than what 1 deployment(s) have already read") == 1
    assert "customers__v1: customers-" in up.stderr and "now gone" in up.stderr
    assert "kappa reset" in up.stderr and "--skip-log-check" in up.stderr
    assert "Dagster UI" not in up.stdout
    assert all(p.exists() for p in state)
    assert not EmbeddedBroker(settings).status().running  # what up started, it stopped

    declined = kappa(settings, "reset", stdin="no\n")
    assert declined.returncode == 1 and "nothing deleted" in declined.stdout
    assert all(p.exists() for p in state)

    confirmed = kappa(settings, "reset", stdin="reset\n")
    assert confirmed.returncode == 0, confirmed.stderr
    assert not any(p.exists() for p in state)
    broker.start()
    try:
        assert find_shortfalls(settings) == []
    finally:
        broker.stop()
