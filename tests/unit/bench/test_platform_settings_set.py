"""The platform benchmark's ``--set NAME=VALUE``: an A/B of one setting on the whole demo."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.platform_load import _setting, parse_args, run_settings


def test_a_setting_is_split_at_its_first_equals_sign() -> None:
    assert _setting("spark.master=local[4]") == ("spark.master", "local[4]")
    assert _setting('spark.conf={"a": "b=c"}') == ("spark.conf", '{"a": "b=c"}')


@pytest.mark.parametrize("item", ["spark.master", "=local[4]", ""])
def test_a_setting_without_name_or_value_says_what_to_write(item: str) -> None:
    with pytest.raises(SystemExit, match=re.escape("give NAME=VALUE, e.g. spark.master=local[4]")):
        _setting(item)


def test_the_setting_reaches_the_runs_settings(tmp_path: Path) -> None:
    args = parse_args(["--home", str(tmp_path / "home"), "--set", "spark.master=local[4]"])
    settings = run_settings(args)
    assert settings.spark.master == "local[4]"
    assert settings.home.root == tmp_path / "home"
