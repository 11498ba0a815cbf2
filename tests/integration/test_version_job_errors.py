"""A version job that is refused fails with the reason as its description, without a stack
trace."""

from __future__ import annotations

import json

import pytest
from dagster import DagsterInstance

from assets.resources import KappaSettings
from assets.versions.jobs import rollback_version
from streaming.deployment import Deployment
from streaming.versions.live_pointer import live_version, pointer_path, switch

pytestmark = pytest.mark.integration


def test_a_rollback_that_lost_a_race_fails_with_its_reason(settings):
    switch(settings.home, "customers", "v1", "first deployment")
    switch(settings.home, "customers", "v2", "promote")
    Deployment("customers", "v1", settings.home).table_path.mkdir(parents=True)
    pointer_path(settings.home, "customers").write_text(json.dumps({"version": "v3", "since": 0}))

    result = rollback_version.execute_in_process(
        run_config={"ops": {"rollback_live": {"config": {"pipeline": "customers"}}}},
        instance=DagsterInstance.ephemeral(),
        resources={"kappa": KappaSettings(home=str(settings.home))},
        raise_on_error=False,
    )

    assert not result.success
    [failure] = result.get_step_failure_events()
    data = failure.event_specific_data
    assert data.user_failure_data is not None, data.error.to_string()
    assert "someone else switched it first" in data.user_failure_data.description
    assert data.error.stack == []  # one line, no stack trace
    assert live_version(settings.home, "customers") == "v3"
