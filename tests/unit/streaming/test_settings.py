from __future__ import annotations

from pathlib import Path

import pytest

from streaming.errors import ConfigError
from streaming.home import Home
from streaming.settings import load_settings


def _config(tmp_path: Path, text: str) -> Path:
    platform_dir = tmp_path / "platform"
    platform_dir.mkdir(exist_ok=True)
    path = platform_dir / "kappa.yaml"
    path.write_text(text)
    return path


def test_flags_beat_environment_beat_file(tmp_path):
    path = _config(tmp_path, "home: from-file\nkafka:\n  bootstrap_servers: file:9092\n")
    from_file = load_settings(path, env={})
    assert from_file.kafka.bootstrap_servers == "file:9092"
    assert from_file.home == Home(tmp_path / "from-file")
    env = {"KAFKA_BOOTSTRAP_SERVERS": "env:9092", "KAPPA_HOME": "/tmp/env-home"}
    from_env = load_settings(path, env=env)
    assert from_env.kafka.bootstrap_servers == "env:9092"
    assert from_env.home == Home(Path("/tmp/env-home"))
    from_flags = load_settings(path, env=env, overrides={"kafka.bootstrap_servers": "flag:1"})
    assert from_flags.kafka.bootstrap_servers == "flag:1"


def test_bootstrap_defaults_to_the_embedded_broker_port(tmp_path):
    path = _config(tmp_path, "broker:\n  port: 19999\n")
    assert load_settings(path, env={}).kafka.bootstrap_servers == "127.0.0.1:19999"


def test_kafka_client_pass_through_and_secrets_are_redacted(tmp_path):
    path = _config(tmp_path, "kafka:\n  client:\n    security.protocol: SASL_SSL\n")
    settings = load_settings(
        path,
        env={"KAPPA_KAFKA_SASL_PASSWORD": "hunter2"},
        overrides={"kafka.client.sasl.username": "me"},
    )
    assert settings.kafka.client_config()["sasl.password"] == "hunter2"
    assert settings.kafka.client_config()["security.protocol"] == "SASL_SSL"
    redacted = settings.kafka.redacted_client()
    assert redacted["sasl.password"] == "***" and redacted["sasl.username"] == "me"
    assert "hunter2" not in repr(redacted)


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("broker:\n  port: seventy\n", {}, "broker.port"),
        ("kafka:\n  bootstrap_servers: nohostport\n", {}, "host:port"),
        ("[1, 2]\n", {}, "mapping"),
        ("spark: {}\n", {"KAPPA_SPARK_CONF": "not json"}, "KAPPA_SPARK_CONF"),
        ("unknown_section: 1\n", {}, "unknown_section"),
    ],
)
def test_bad_settings_fail_with_a_message_naming_the_setting(tmp_path, text, env, message):
    with pytest.raises(ConfigError, match=message):
        load_settings(_config(tmp_path, text), env=env)


def test_missing_config_file_says_how_to_fix(tmp_path):
    with pytest.raises(ConfigError, match="KAPPA_CONFIG"):
        load_settings(tmp_path / "nope.yaml", env={})


def test_child_environment_round_trips(tmp_path):
    path = _config(tmp_path, "kafka:\n  client:\n    client.id: abc\n")
    settings = load_settings(path, env={"KAPPA_SPARK_CONF": '{"spark.x": "1"}'})
    again = load_settings(path, env=settings.to_env())
    assert again == settings


def test_the_kafka_cluster_defaults_to_the_embedded_broker(tmp_path):
    path = _config(tmp_path, "broker:\n  port: 19999\n  controller_port: 19998\n")
    assert load_settings(path, env={}).kafka.bootstrap_servers == "127.0.0.1:19999"
    remote = load_settings(path, env={"KAFKA_BOOTSTRAP_SERVERS": "kafka.example:9093"})
    assert remote.kafka.bootstrap_servers == "kafka.example:9093"


def test_pipelines_come_from_the_file_or_the_environment(tmp_path):
    path = _config(tmp_path, "pipelines: [pipelines.customers]\n")
    assert load_settings(path, env={}).pipelines == ("pipelines.customers",)
    env = {"KAPPA_PIPELINES": "my_pkg.orders, my_pkg.payments"}
    assert load_settings(path, env=env).pipelines == ("my_pkg.orders", "my_pkg.payments")
    with pytest.raises(ConfigError, match="pipelines"):
        load_settings(path, env={"KAPPA_PIPELINES": "not a module"})


def test_spark_defaults_come_from_the_config_file(tmp_path):
    path = _config(tmp_path, "spark:\n  conf:\n    spark.sql.shuffle.partitions: 8\n")
    conf = load_settings(path, env={"KAPPA_SPARK_CONF": '{"spark.x": "1"}'}).spark.conf
    assert conf == {"spark.sql.shuffle.partitions": "8", "spark.x": "1"}


def test_the_broker_ports_and_heap_are_settings_that_reach_a_child():
    settings = load_settings(
        env={
            "KAPPA_BROKER_PORT": "7001",
            "KAPPA_BROKER_CONTROLLER_PORT": "7002",
            "KAPPA_BROKER_HEAP": "512m",
        }
    )
    broker = settings.broker
    assert (broker.port, broker.controller_port, broker.heap) == (7001, 7002, "512m")
    assert load_settings(env=settings.to_env()).broker == broker


def test_a_bad_heap_fails_at_load_naming_the_setting():
    with pytest.raises(ConfigError, match=r"broker\.heap"):
        load_settings(env={"KAPPA_BROKER_HEAP": "lots"})


def test_the_cut_settings_reach_a_child():
    settings = load_settings(env={"KAPPA_CUTS_ENABLED": "false", "KAPPA_CUT_MAX_LAG_S": "4"})
    assert (settings.cuts.enabled, settings.cuts.max_lag_s) == (False, 4.0)
    assert load_settings(env=settings.to_env()).cuts == settings.cuts
    assert load_settings(env={}).cuts.enabled
