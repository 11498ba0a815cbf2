"""Retiring a version deletes every piece of its state, so its name can be deployed afresh."""

from __future__ import annotations

from pathlib import Path

from streaming.define.registry import get_pipeline
from streaming.home import Home
from streaming.run.deployment import Deployment
from streaming.settings import load_settings
from streaming.versions.alignment import LiveAlignment
from streaming.versions.code_pins import pinned_pipeline
from streaming.versions.live_pointer import switch
from streaming.versions.retire import retire


def test_retire_removes_the_pinned_code_and_the_alignment_cap(tmp_path: Path) -> None:
    switch(Home(tmp_path), "customers", "v1", "first deployment")
    old = Deployment("customers", "v2", tmp_path)
    pin = pinned_pipeline(Home(tmp_path), _customers(), "v2").pinned_at
    alignment = LiveAlignment(old)
    alignment.refresh()  # a non-live version writes its cap (nothing committed live: empty)
    for path in (old.table_path, old.checkpoint_path, old.dead_letter_path):
        path.mkdir(parents=True)
    assert pin is not None and pin.exists() and alignment.path.exists()

    retire(old)

    leftovers = [p for p in tmp_path.rglob("*") if "customers__v2" in p.name]
    assert leftovers == []


def test_a_retired_version_name_runs_the_current_code_when_deployed_again(
    tmp_path: Path,
) -> None:
    switch(Home(tmp_path), "customers", "v1", "first deployment")
    old = Deployment("customers", "v2", tmp_path)
    pin = pinned_pipeline(Home(tmp_path), _customers(), "v2").pinned_at
    assert pin is not None
    pin.write_text(pin.read_text().replace('"""', '"""(the old code) ', 1))

    retire(old)

    again = pinned_pipeline(Home(tmp_path), _customers(), "v2")
    assert again.pinned_at is not None and "(the old code)" not in again.pinned_at.read_text()
    assert again.pipeline.fingerprint == _customers().fingerprint


def _customers():  # type: ignore[no-untyped-def]
    return get_pipeline(load_settings(env={}).pipelines, "customers")
