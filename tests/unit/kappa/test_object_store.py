"""The object store's credentials: generated once per home, private, never shown."""

from __future__ import annotations

import os
import stat

from kappa.object_store import ObjectStore, taken_port_flag
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


def test_the_port_weed_could_not_bind_is_read_from_its_log():
    # What weed mini 4.x prints before exiting with code 1 (measured here).
    line = (
        "E1125 22:15:34.550431 mini.go:1244 Port allocation failed: port 35943 for Filer "
        "(specified by flag filer.port) is not available on 127.0.0.1 and cannot be used"
    )
    assert taken_port_flag(f"banner\n{line}\n") == "filer.port"
    assert taken_port_flag(line.replace("filer.port", "s3.port")) == "s3.port"
    fallback = "W1125 gRPC port 67419 for S3 is not available, finding alternative..."
    assert taken_port_flag(fallback) is None
