"""Errors a user can act on reach them as one line (exit code 2), never as a traceback."""

from __future__ import annotations

import json

import pytest

from kappa.cli import main
from streaming.delta.table_reader import open_table
from streaming.deployment import Deployment
from streaming.errors import KappaError
from streaming.home import Home
from streaming.versions.live_pointer import live_table_path, pointer_path, switch


def _kappa(home: Home, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["--home", str(home), "--bootstrap-servers", "127.0.0.1:1", *args])
    return code, capsys.readouterr().err


def test_a_rollback_that_lost_a_race_is_one_line(tmp_path, capsys):
    home = Home(tmp_path / "home")
    switch(home, "customers", "v1", "first deployment")
    switch(home, "customers", "v2", "promote")
    Deployment("customers", "v1", home).table_path.mkdir(parents=True)
    # another operator's switch to v3 has written the pointer: the rollback must not undo it
    pointer_path(home, "customers").write_text(json.dumps({"version": "v3", "since": 0}))

    code, err = _kappa(home, capsys, "rollback", "customers")

    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "someone else switched it first" in lines[0], err


def test_no_live_version_and_no_table_are_user_errors(tmp_path):
    with pytest.raises(KappaError, match="no live version"):
        live_table_path(Home(tmp_path), "customers")
    with pytest.raises(KappaError, match="kappa run"):
        open_table(tmp_path / "tables" / "customers__v1")


def test_a_kafka_setting_librdkafka_refuses_is_one_line_naming_where_to_fix_it(tmp_path, capsys):
    code, err = _kappa(
        Home(tmp_path / "home"),
        capsys,
        "--kafka",
        "security.protocol=bogus",
        "demo",
        "produce",
        "--count",
        "1",
    )

    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert 'Invalid value "bogus" for configuration property "security.protocol"' in lines[0]
    assert "--kafka KEY=VALUE" in lines[0] and "KAPPA_KAFKA_" in lines[0]
