"""A deployment refuses a log that cannot give a replay equal to the live run, before it starts:
a stateful pipeline over a topic that is compacted or expires records, and a replay from the
earliest offsets of a log whose beginning is gone."""

from __future__ import annotations

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from bench.support.producing import customer_changes, send, transactions
from kappa.cli import main
from streaming.deployment import Deployment
from streaming.kafka.admin import ensure_topics
from streaming.kafka.history import dropping_settings

pytestmark = pytest.mark.integration


def _kappa(settings, capsys, *args: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    where = ["--home", str(settings.home), "--bootstrap-servers", settings.kafka.bootstrap_servers]
    code = main([*where, "--spark-master", "local[2]", *args])
    return code, capsys.readouterr().err


def test_an_as_of_join_over_a_compacted_topic_is_refused_naming_the_setting(
    settings, broker, capsys
):
    ensure_topics(settings, {"customers": {"cleanup.policy": "compact"}})
    ensure_topics(settings, {"transactions": {"retention.ms": str(7 * 86_400_000)}})
    send(settings, customer_changes(50, seed=1))
    send(settings, transactions(50, seed=2))

    code, err = _kappa(settings, capsys, "run", "transactions_enriched", "--until-caught-up")

    assert code != 0
    assert "customers has cleanup.policy=compact" in err
    assert "transactions has retention.ms=604800000" in err
    assert "cleanup.policy=delete, retention.ms=-1" in err
    # refused before anything was written
    deployment = Deployment("transactions_enriched", "v1", settings.home)
    assert not deployment.table_path.exists() and not deployment.checkpoint_path.exists()


def test_the_platform_creates_topics_that_keep_every_record(settings, broker):
    ensure_topics(settings, ["customers", "transactions"])
    client = settings.kafka.client_config()
    assert dropping_settings(client, ["customers", "transactions"]) == []


def test_a_replay_from_a_log_whose_beginning_is_gone_is_refused(settings, broker, capsys):
    send(settings, customer_changes(200, seed=3))
    admin = AdminClient(settings.kafka.client_config())
    [done] = admin.delete_records([TopicPartition("customers", 0, 5)]).values()
    done.result()

    code, err = _kappa(settings, capsys, "run", "customers", "--until-caught-up")

    assert code != 0
    assert "no longer holds its beginning" in err and "customers-0 (first offset 5)" in err
