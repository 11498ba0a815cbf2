"""Wherever settings are shown (``kappa --debug``, a deployment's start in its log and in
Dagster's run log, the metadata of its first report), secret-looking values are masked: each
marker of a secret, not only ``password``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from assets.relay import settings_metadata
from bench.support.settings import private_settings
from kappa.cli import main
from streaming.deployment import Deployment
from streaming.run.options import RunOptions
from streaming.run.pipes_reporter import PipesReporter
from streaming.run.reporting import LogReporter
from streaming.settings import Settings

# One secret per marker the platform knows, each value unlike any other text shown.
KAFKA_SECRETS = {
    "sasl.password": "pw-1f2e3d",
    "sasl.oauthbearer.client.secret": "secret-9a8b7c",
    "ssl.key.pem": "pem-7c6d5e",
    "ssl.engine.private.key": "private-2b1c0d",
    "sasl.oauthbearer.credentials": "credential-6f5e4d",
    "sasl.jaas.config": "jaas-0d9c8b",
}
SPARK_SECRETS = {
    "spark.hadoop.fs.s3a.secret.key": "s3secret-4e3d2c",
    "spark.hadoop.fs.s3a.session.token": "token-3a2b1c",
}
PLAIN = {"sasl.username": "alice-user", "security.protocol": "PLAINTEXT"}


def _settings(home: Path) -> Settings:
    overrides = {f"kafka.client.{k}": v for k, v in {**KAFKA_SECRETS, **PLAIN}.items()}
    overrides |= {f"spark.conf.{k}": v for k, v in SPARK_SECRETS.items()}
    return private_settings(home, **overrides)


def _assert_masked(shown: str) -> None:
    for name, value in {**KAFKA_SECRETS, **SPARK_SECRETS}.items():
        assert value not in shown, f"{name} shown in clear"
    assert all(value in shown for value in PLAIN.values())  # the rest is shown as it is
    assert shown.count("***") >= len(KAFKA_SECRETS) + len(SPARK_SECRETS)


def test_kappa_debug_shows_the_settings_with_secrets_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {**KAFKA_SECRETS, **PLAIN}.items():
        monkeypatch.setenv("KAPPA_KAFKA_" + name.upper().replace(".", "_"), value)
    monkeypatch.setenv("KAPPA_SPARK_CONF", json.dumps(SPARK_SECRETS))

    assert main(["--debug", "--home", str(tmp_path / "home"), "tables"]) == 0

    shown = capsys.readouterr().err
    assert "kappa: settings" in shown
    _assert_masked(shown)


def test_a_deployments_start_in_its_log_shows_the_settings_with_secrets_masked(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path / "home")
    log = io.StringIO()

    LogReporter(log).started(Deployment("customers", "v1", settings.home), RunOptions(), settings)

    assert json.loads(log.getvalue())["settings"]["kafka"]["client"]["sasl.password"] == "***"
    _assert_masked(log.getvalue())


def test_dagster_shows_the_settings_with_secrets_masked(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "home")

    class _Log:
        def __init__(self) -> None:
            self.lines: list[str] = []

        def info(self, message: str) -> None:
            self.lines.append(message)

    class _Context:
        log = _Log()

    context: Any = _Context()
    PipesReporter(context).started(Deployment("customers", "v1", settings.home), None, settings)
    _assert_masked("\n".join(context.log.lines))  # the run's log

    metadata = settings_metadata(settings)["settings"].value  # the first report's metadata
    _assert_masked(json.dumps(metadata))
