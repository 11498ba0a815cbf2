"""The Dagster code location refuses bad pipeline modules and unsafe names with a message saying
what to fix, as `dagster` itself reports it; an unsafe launch config fails before touching disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import DagsterEventType

from streaming.settings import REPO_ROOT
from tests.integration.materializing import materialize_table

pytestmark = pytest.mark.integration

_UNSAFE_MODULE = """
from dataclasses import replace

from pipelines.customers import PIPELINE as CUSTOMERS

PIPELINE = replace(CUSTOMERS, name="../escape")
"""


def _validate(settings, pipelines: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    env = {
        **os.environ,
        **settings.to_env(),
        "KAPPA_PIPELINES": pipelines,
        "DAGSTER_HOME": str(tmp_path / "dagster"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "modules"), str(REPO_ROOT)]),
    }
    (tmp_path / "dagster").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_bad_pipeline_modules_fail_the_code_location_with_what_to_fix(settings, tmp_path):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "unsafe_pipeline.py").write_text(_UNSAFE_MODULE)

    good = _validate(settings, "pipelines.customers,pipelines.customer_spend", tmp_path)
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]

    cases = {
        "pipelines.customers,pipelines.nope": "cannot import pipeline module 'pipelines.nope'",
        "pipelines.customers,json": "module 'json' must define PIPELINE = Pipeline(...)",
        "pipelines.customers,unsafe_pipeline": "'../escape' is invalid",
    }
    for pipelines, message in cases.items():
        result = _validate(settings, pipelines, tmp_path)
        output = result.stdout + result.stderr
        assert result.returncode == 1, (pipelines, output[-3000:])
        assert message in output, (pipelines, output[-3000:])


def test_an_unsafe_version_partition_fails_before_touching_disk(settings):
    # The version is the table asset's partition: an unsafe one added by hand.
    result = materialize_table(settings, "customers", version="../../etc", mode=None)
    assert not result.success
    types = [e.event_type for e in result.all_events]
    assert DagsterEventType.STEP_UP_FOR_RETRY not in types  # retrying cannot fix a bad config
    [failure] = [e for e in result.all_events if e.is_step_failure]
    description = failure.step_failure_data.user_failure_data.description
    assert "version '../../etc' is invalid" in description
    assert not (settings.home.root / "tables").exists()
