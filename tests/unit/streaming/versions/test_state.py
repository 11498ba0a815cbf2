"""A version's role comes from the live pointer and its history, in one place."""

from __future__ import annotations

import time

from kappa.testing.settings import private_settings
from streaming.deployment import Deployment
from streaming.versions.live_pointer import switch
from streaming.versions.retention import expired_versions
from streaming.versions.state import Role, pipeline_versions


def test_roles_follow_the_switches_and_the_rollback_window(tmp_path):
    settings = private_settings(tmp_path / "home", **{"versions.retention_hours": 1})
    home = settings.home
    for version in ("v1", "v2", "v3", "v4"):
        Deployment("customers", version, home).table_path.mkdir(parents=True)
    switch(home, "customers", "v1", "first")
    switch(home, "customers", "v2", "promote")
    switch(home, "customers", "v3", "promote")
    now = time.time()

    within = pipeline_versions(settings, "customers", now)
    assert {s.version: s.role for s in within.deployed(home)} == {
        "v1": Role.RETAINED,
        "v2": Role.RETAINED,
        "v3": Role.LIVE,
        "v4": Role.CANDIDATE,  # never live
    }
    later = pipeline_versions(settings, "customers", now + 3601)
    assert later.role("v1") == later.role("v2") == Role.RETIRED
    assert later.role("v4") == Role.CANDIDATE  # a candidate never expires by age
    assert [s.version for s in expired_versions(settings, "customers", now + 3601)] == [
        "v1",
        "v2",
    ]

    switch(home, "customers", "v2", "rollback")  # back to v2: it is live, v3 is kept
    again = pipeline_versions(settings, "customers", now)
    assert again.role("v2") == Role.LIVE and again.role("v3") == Role.RETAINED
