"""A Kafka client setting given once (``--kafka KEY=VALUE`` or ``KAPPA_KAFKA_<KEY>``) reaches
every client the platform creates. An invalid value makes each client refuse to be created, which
shows it arrived without needing a broker."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException

from bench.support.settings import private_settings
from kappa.cli import main
from kappa.demo import produce
from streaming.errors import KafkaLogError
from streaming.kafka.admin import ensure_topics
from streaming.kafka.log import KafkaLog
from streaming.settings import load_settings

BAD = {"KAPPA_KAFKA_SECURITY_PROTOCOL": "bogus"}
REFUSED = 'Invalid value "bogus" for configuration property "security.protocol"'


def _settings(tmp_path):  # type: ignore[no-untyped-def]
    base = private_settings(tmp_path / "home")
    return load_settings(env={**base.to_env(), **BAD})


def test_the_environment_reaches_admin_producer_and_log_probes(tmp_path):
    settings = _settings(tmp_path)
    assert settings.kafka.client == {"security.protocol": "bogus"}
    with pytest.raises(KafkaException, match=REFUSED):
        ensure_topics(settings, ["customers"])
    # the log probe reports it as an unreachable broker, with librdkafka's reason
    with (
        pytest.raises(KafkaLogError, match=REFUSED),
        KafkaLog(settings.kafka.client_config()) as log,
    ):
        log.latest(["customers"])
    with pytest.raises(KafkaException, match=REFUSED):
        produce(settings, count=1, source=iter([]))


def test_the_setting_travels_to_child_processes(tmp_path):
    # The Pipes subprocess, the demo producer and Dagster get their settings as environment.
    settings = _settings(tmp_path)
    assert settings.to_env()["KAPPA_KAFKA_SECURITY_PROTOCOL"] == "bogus"
    assert load_settings(env=settings.to_env()).kafka.client == settings.kafka.client


@pytest.mark.parametrize("given", ["flag", "environment"])
def test_the_cli_hands_it_to_the_clients(tmp_path, capsys, monkeypatch, given):
    base = private_settings(tmp_path / "home")
    for key, value in base.to_env().items():
        monkeypatch.setenv(key, value)
    args = ["--kafka", "security.protocol=bogus"] if given == "flag" else []
    if given == "environment":
        monkeypatch.setenv(*next(iter(BAD.items())))
    try:
        code = main([*args, "demo", "produce", "--count", "1"])
        reported = capsys.readouterr().err
    except KafkaException as exc:  # today the CLI lets librdkafka's refusal through as is
        code, reported = 1, str(exc)
    assert code != 0
    assert REFUSED in reported
