"""Which scheduler pool a deployment's batches join: the ones that follow the log share one
(served in arrival order, so none starves); replays to a fixed end have their own."""

from __future__ import annotations

from streaming.engine.pools import DEPLOYMENTS, QUALITY, REPLAYS, deployment_pool
from streaming.run.options import RunOptions


def test_deployments_that_follow_the_log_share_one_pool() -> None:
    assert deployment_pool(RunOptions()) == DEPLOYMENTS
    assert deployment_pool(RunOptions(trigger_interval="5 seconds")) == DEPLOYMENTS


def test_replays_to_a_fixed_end_have_a_pool_of_their_own() -> None:
    assert deployment_pool(RunOptions(mode="until_caught_up")) == REPLAYS
    assert deployment_pool(RunOptions(until_live=True)) == REPLAYS
    assert len({DEPLOYMENTS, REPLAYS, QUALITY}) == 3
