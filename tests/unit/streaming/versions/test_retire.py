"""Retiring a version deletes every file it owns, so its name can be deployed afresh."""

from __future__ import annotations

from pathlib import Path

from streaming.define.registry import get_pipeline
from streaming.deployment import Deployment
from streaming.deployment.code_pin import pinned_pipeline
from streaming.home import Home
from streaming.settings import load_settings
from streaming.versions.alignment import LiveAlignment
from streaming.versions.live_pointer import switch
from streaming.versions.retire import retire

# The home's folders that hold every deployment's files of a kind: they stay, emptied.
SHARED_FOLDERS = {
    "alignment",
    "checkpoints",
    "code",
    "dead_letters",
    "forward_only",
    "logs",
    "quality",
    "quality/comparisons",
    "quality/docs",
    "quality/validations",
    "state",
}


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_retire_leaves_no_file_of_the_version_behind(tmp_path: Path) -> None:
    home = Home(tmp_path)
    switch(home, "customers", "v1", "first deployment")
    switch(home, "customers", "v3", "promote")
    kept = Deployment("customers", "v3", home)
    kept.table_path.mkdir(parents=True)
    before = _listing(tmp_path)  # the live version's files and the pipeline's live pointer

    old = Deployment("customers", "v2", home)
    assert pinned_pipeline(home, _customers(), "v2").pinned_at is not None
    LiveAlignment(old).refresh()  # a non-live version writes its cap
    for folder in (old.table_path, old.checkpoint_path, old.dead_letter_path, old.state_path):
        (folder / "part").mkdir(parents=True)
    old.log_path.parent.mkdir(parents=True, exist_ok=True)
    old.log_path.write_text("its process's output")
    old.validation_path.parent.mkdir(parents=True)
    old.validation_path.write_text("{}")
    old.forward_only_path.parent.mkdir(parents=True)
    old.forward_only_path.write_text("{}")  # it started forward-only
    for comparison in (kept.comparison_with(old), old.comparison_with(kept)):
        for path in comparison.paths():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")
    (tmp_path / "logs" / "broker.log").write_text("not a deployment's")
    assert len(_listing(tmp_path) - before) > 15

    retire(old)

    assert _listing(tmp_path) - before == SHARED_FOLDERS | {"logs/broker.log"}


def test_a_retired_version_name_runs_the_current_code_when_deployed_again(
    tmp_path: Path,
) -> None:
    switch(Home(tmp_path), "customers", "v1", "first deployment")
    old = Deployment("customers", "v2", tmp_path)
    pin = pinned_pipeline(Home(tmp_path), _customers(), "v2").pinned_at
    assert pin is not None
    module = pin / "pipelines" / "customers.py"
    module.write_text(module.read_text().replace('"""', '"""(the old code) ', 1))

    retire(old)

    again = pinned_pipeline(Home(tmp_path), _customers(), "v2")
    assert again.pinned_at is not None
    assert "(the old code)" not in (again.pinned_at / "pipelines" / "customers.py").read_text()
    assert again.pipeline.fingerprint == _customers().fingerprint


def _customers():  # type: ignore[no-untyped-def]
    return get_pipeline(load_settings(env={}).pipelines, "customers")
