"""An engine started outside the platform (a SparkApplication on Kubernetes): clients wait for
it and never start one of their own; its advertised host comes from the environment."""

from __future__ import annotations

import pytest

from streaming.engine.client import EngineUnavailableError, ensure_engine
from streaming.settings import load_settings


def test_a_client_of_an_external_engine_waits_then_says_where_to_look(tmp_path):
    settings = load_settings(env={}, overrides={"home": str(tmp_path), "engine.external": True})
    with pytest.raises(EngineUnavailableError, match=r"engine\.external"):
        ensure_engine(settings, timeout_s=0.5)
    # Nothing was started: no engine log, no start lock taken.
    assert not settings.home.log("engine").exists()
    assert not settings.home.engine_lock.exists()


def test_the_kubernetes_environment_reaches_the_engine_settings(tmp_path):
    env = {
        "KAPPA_HOME": str(tmp_path),
        "KAPPA_ENGINE_HOST": "0.0.0.0",
        "KAPPA_ENGINE_PORT": "7070",
        "KAPPA_ENGINE_ADVERTISED_HOST": "kappa-engine.kappa.svc",
        "KAPPA_ENGINE_EXTERNAL": "true",
    }
    engine = load_settings(env=env).engine
    assert (engine.host, engine.port) == ("0.0.0.0", 7070)
    assert (engine.advertised_host, engine.external) == ("kappa-engine.kappa.svc", True)
    # A child process (the engine, a run) gets the same settings.
    assert load_settings(env=load_settings(env=env).to_env()).engine == engine
