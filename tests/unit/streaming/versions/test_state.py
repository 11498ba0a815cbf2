"""A version's role comes from the live pointer and its history, in one place."""

from __future__ import annotations

import json
import time
from dataclasses import asdict

from bench.support.settings import private_settings
from streaming.deployment import Deployment
from streaming.home import Home
from streaming.versions.live_pointer import Switch, history_path, switch
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


def _happened(home: Home, *switches: Switch) -> None:
    """The history of switches made at the times they carry, as the live pointer records it."""
    path = history_path(home, "customers")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(asdict(s)) + "\n" for s in switches))


def test_retention_counts_from_the_last_time_a_version_was_replaced(tmp_path):
    settings = private_settings(tmp_path / "home", **{"versions.retention_hours": 1})
    home = settings.home
    for version in ("v1", "v2"):
        Deployment("customers", version, home).table_path.mkdir(parents=True)
    hour = 3600.0
    start = time.time() - 5 * hour
    switch(home, "customers", "v1", "first deployment")  # the pointer; its history is below
    _happened(
        home,
        Switch("customers", None, "v1", "first deployment", at=start),
        Switch("customers", "v1", "v2", "promote", at=start + hour),  # v1 replaced long ago,
        Switch("customers", "v2", "v1", "rollback", at=start + 2 * hour),  # live again,
    )
    replaced = switch(home, "customers", "v2", "promote").at  # and replaced just now
    in_ten_minutes = replaced + 600

    v1 = pipeline_versions(settings, "customers", in_ten_minutes).state("v1")

    assert (v1.role, v1.replaced_at) == (Role.RETAINED, replaced)
    assert expired_versions(settings, "customers", in_ten_minutes) == []  # kept to roll back to
    later = expired_versions(settings, "customers", replaced + hour + 1)
    assert [s.version for s in later] == ["v1"]
