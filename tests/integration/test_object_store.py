"""The object store (a real ``weed mini``) starts despite a port taken under it and stops for good.

Its internal ports are chosen free just before ``weed`` binds them, so on a busy machine another
process can take one in between; ``stop()`` must return only once the S3 port is free, or the
next start (``kappa up`` after Ctrl-C) finds it taken.
"""

from __future__ import annotations

import socket

import pytest

from kappa import object_store
from kappa.broker import port_open
from kappa.errors import BrokerError
from kappa.object_store import ObjectStore
from kappa.testing.settings import private_settings

pytestmark = pytest.mark.integration


def test_a_port_taken_between_choice_and_bind_is_chosen_again(tmp_path, monkeypatch):
    store = ObjectStore(private_settings(tmp_path / "home", **{"broker.storage": "s3"}))
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        choices = iter([taken])
        real_choice = object_store._free_port_pair
        # The first internal port handed to weed (the filer's) is one a listener holds.
        monkeypatch.setattr(
            object_store, "_free_port_pair", lambda host: next(choices, None) or real_choice(host)
        )
        try:
            status = store.start()
            assert status.running
            log = store.log_file.read_text(errors="replace")
            assert object_store.taken_port_flag(log) == "filer.port", log[-2000:]
            assert f"port {taken} for Filer" in log
        finally:
            store.stop()
    assert not store.status().running


def test_a_taken_s3_port_fails_at_once_and_names_the_setting(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        settings = private_settings(
            tmp_path / "home", **{"broker.storage": "s3", "object_store.port": port}
        )
        with pytest.raises(BrokerError, match="KAPPA_OBJECT_STORE_PORT"):
            ObjectStore(settings).start()


def test_after_stop_the_s3_port_is_free_and_the_store_starts_again(tmp_path):
    store = ObjectStore(private_settings(tmp_path / "home", **{"broker.storage": "s3"}))
    try:
        for _ in range(4):
            store.start()
            assert port_open(store.host, store.port)
            assert store.stop()
            assert not port_open(store.host, store.port)
            assert not store.status().running
    finally:
        store.stop()


def test_the_store_writes_its_log_into_the_home_and_nothing_into_the_temp_dir(
    tmp_path, monkeypatch
):
    temp = tmp_path / "tmp"
    temp.mkdir()
    # weed's logging library writes its files into $TMPDIR unless told otherwise.
    monkeypatch.setenv("TMPDIR", str(temp))
    store = ObjectStore(private_settings(tmp_path / "home", **{"broker.storage": "s3"}))
    try:
        store.start()
    finally:
        store.stop()
    assert sorted(p.name for p in temp.iterdir()) == []
    assert "Start Seaweed" in store.log_file.read_text(errors="replace")
