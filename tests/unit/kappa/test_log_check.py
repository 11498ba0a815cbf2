"""The start-up check: which deployments have read further than the log now goes."""

from __future__ import annotations

import json

from bench.support.settings import private_settings
from kappa.log_check import _compare, checkpoint_positions, lost_log_message
from streaming.deployment import Deployment
from streaming.home import Home


def _offset_log(home: Home, deployment: str, batch: int, offsets: dict) -> None:
    folder = Deployment.from_id(deployment, home).checkpoint_path / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}}
    (folder / str(batch)).write_text("\n".join(["v1", json.dumps(meta), json.dumps(offsets)]))


def test_positions_come_from_the_latest_planned_batch(tmp_path):
    home = Home(tmp_path)
    _offset_log(home, "customers__v1", 3, {"customers": {"0": 10, "1": 7}})
    _offset_log(home, "customers__v1", 11, {"customers": {"0": 42, "1": 9}})
    _offset_log(home, "customer_spend__v2", 0, {"transactions": {"0": 5}})
    Deployment("empty", "v1", home).checkpoint_path.mkdir(parents=True)

    assert checkpoint_positions(home) == {
        "customer_spend__v2": {"transactions": {0: 5}},
        "customers__v1": {"customers": {0: 42, 1: 9}},
    }


def test_a_partition_behind_its_checkpoint_or_gone_is_a_shortfall():
    positions = {
        "customers__v1": {"customers": {0: 42, 1: 9, 2: 0}},
        "customer_spend__v1": {"transactions": {0: 5}},
    }
    ends = {"customers": {0: 42, 1: 3, 2: 0}}  # transactions was deleted

    found = [
        (s.deployment, s.topic, s.partition, s.checkpoint, s.log_end)
        for s in _compare(positions, ends)
    ]

    assert found == [
        ("customer_spend__v1", "transactions", 0, 5, None),
        ("customers__v1", "customers", 1, 9, 3),
    ]


def test_the_message_names_what_happened_and_both_ways_out(tmp_path):
    settings = private_settings(tmp_path / "home")
    positions = {"customers__v1": {"customers": {1: 9}}}
    text = lost_log_message(list(_compare(positions, {"customers": {1: 3}})), settings)

    assert "customers__v1: customers-1 read up to offset 9, the log ends at 3" in text
    assert "kappa reset" in text and "kappa deploy PIPELINE --version NEW" in text
    assert "--skip-log-check" in text
