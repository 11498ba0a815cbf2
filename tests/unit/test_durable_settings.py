"""Settings of the durable broker, its object store and the platform's producers."""

from __future__ import annotations

import os
import stat

import pytest

from kappa.demo import producer_config
from kappa.errors import ConfigError
from kappa.object_store import ObjectStore
from kappa.resume import _pipeline_of
from kappa.settings import load_settings
from tests.conftest import make_settings


def test_durable_engine_is_the_default_and_memory_a_setting():
    assert load_settings(env={}).broker.storage == "s3"
    memory = load_settings(env={"KAPPA_BROKER_STORAGE": "memory", "KAPPA_OBJECT_STORE_PORT": "9"})
    assert (memory.broker.storage, memory.object_store.port) == ("memory", 9)
    assert load_settings(env=memory.to_env()).broker.storage == "memory"


def test_an_unknown_engine_fails_at_load_naming_the_setting():
    with pytest.raises(ConfigError, match=r"broker\.storage.*'s3' or 'memory'"):
        load_settings(env={"KAPPA_BROKER_STORAGE": "postgres"})


def test_credentials_are_generated_once_per_home_and_private(tmp_path):
    settings = make_settings(tmp_path / "home")
    store = ObjectStore(settings)
    store._ensure_credentials()
    first = store.broker_env()
    store._ensure_credentials()

    assert store.broker_env() == first
    assert stat.S_IMODE(os.stat(store.config_file).st_mode) == 0o600
    secret = first["AWS_SECRET_ACCESS_KEY"]
    assert len(secret) >= 32
    assert secret not in store.status().describe()
    assert secret not in " ".join(f"{k}={v}" for k, v in settings.to_env().items())
    other = ObjectStore(make_settings(tmp_path / "other"))
    other._ensure_credentials()
    assert other.broker_env()["AWS_SECRET_ACCESS_KEY"] != secret


def test_demo_producer_batches_by_the_configured_linger(tmp_path):
    settings = make_settings(tmp_path / "home", **{"producer.linger_ms": 2500})
    config = producer_config(settings)

    assert config["linger.ms"] == "2500"
    assert int(config["message.timeout.ms"]) > 2500  # librdkafka refuses less than the linger


def test_deployment_runs_are_recognised_by_job_or_asset_selection():
    pipelines = ["customers", "customer_spend"]
    deploy = {"jobName": "deploy_customers", "assetSelection": []}
    from_ui = {"jobName": "__ASSET_JOB", "assetSelection": [{"path": ["tables", "customer_spend"]}]}
    quality = {"jobName": "__ASSET_JOB", "assetSelection": [{"path": ["kafka", "customers"]}]}

    assert _pipeline_of(deploy, pipelines) == "customers"
    assert _pipeline_of(from_ui, pipelines) == "customer_spend"
    assert _pipeline_of(quality, pipelines) is None
    assert _pipeline_of({"jobName": "promote_version", "assetSelection": []}, pipelines) is None
