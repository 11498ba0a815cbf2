"""The names a deployment publishes under: the same in every incarnation of the deployment (so a
restart fences the last one), different for another deployment, topic or platform home (homes
share a broker in tests)."""

from __future__ import annotations

from pathlib import Path

from streaming.deployment import Deployment
from streaming.run.changelog_records import record_key
from streaming.run.publication import position_group, transactional_id


def test_a_deployment_publishes_under_the_same_names_in_every_incarnation(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "link").symlink_to(home)
    once, again = Deployment("fraud_alerts", "v1", home), Deployment("fraud_alerts", "v1", home)
    via_link = Deployment("fraud_alerts", "v1", tmp_path / "link")
    for deployment in (again, via_link):
        assert transactional_id(deployment, "alerts") == transactional_id(once, "alerts")
        assert position_group(deployment) == position_group(once)
    assert "fraud_alerts__v1" in transactional_id(once, "alerts")


def test_names_differ_between_homes_deployments_and_topics(tmp_path: Path):
    deployments = [
        Deployment("fraud_alerts", "v1", tmp_path / "a"),
        Deployment("fraud_alerts", "v1", tmp_path / "b"),
        Deployment("fraud_alerts", "v2", tmp_path / "a"),
    ]
    ids = {transactional_id(d, t) for d in deployments for t in ("alerts", "other")}
    assert len(ids) == 6
    assert len({position_group(d) for d in deployments}) == 3


def test_a_row_is_published_under_its_key_a_composite_key_as_compact_json():
    row = {"ticker": "ACME", "window_start": 1_700_000_040_000, "trade_count": 3}
    assert record_key(row, ("ticker",)) == "ACME"
    assert record_key(row, ("ticker", "window_start")) == (
        '{"ticker":"ACME","window_start":1700000040000}'
    )
