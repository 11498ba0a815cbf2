"""The object store's credentials: generated once per home, private, never shown."""

from __future__ import annotations

import os
import stat

from kappa.object_store import ObjectStore
from kappa.testing.settings import private_settings


def test_credentials_are_generated_once_per_home_and_private(tmp_path):
    settings = private_settings(tmp_path / "home")
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
    other = ObjectStore(private_settings(tmp_path / "other"))
    other._ensure_credentials()
    assert other.broker_env()["AWS_SECRET_ACCESS_KEY"] != secret
