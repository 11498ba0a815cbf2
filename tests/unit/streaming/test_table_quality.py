"""Running a table's suite needs a spec: a pipeline without one is told what to add."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kappa.testing.settings import private_settings
from pipelines.customer_spend import PIPELINE as CUSTOMER_SPEND
from streaming.errors import DefineError
from streaming.table_quality import run_table_suite


def test_a_pipeline_without_a_quality_spec_fails_saying_what_to_add(tmp_path: Path) -> None:
    bare = dataclasses.replace(CUSTOMER_SPEND, quality=None)
    assert bare.quality_spec is None
    with pytest.raises(DefineError, match="declares no quality spec; add quality=TableSpec"):
        run_table_suite(private_settings(tmp_path), bare)
