"""What the real-browser tests share: Debian's Chromium driven by Playwright, the Dagster UI's
first-visit dialog skipped, a screenshot per step kept under ``test-artifacts/``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kappa.dagster_api import DagsterApi
from streaming.settings import REPO_ROOT

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    """Debian's Chromium, installed by the test when missing (root, apt-get)."""
    found = shutil.which("chromium")
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "chromium"],
            check=True,
            capture_output=True,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        found = shutil.which("chromium")
    if found is None:
        pytest.fail("Chromium is not installed and could not be installed (needs root + apt-get)")
    return found


def skip_first_visit_dialog(api: DagsterApi) -> None:
    """Record Dagster's first-visit 'Join the Dagster community' dialog as seen, as its Skip
    button does: the dialog can open late on a loaded machine, over whatever a test clicks."""
    api.query("mutation { setNuxSeen }")


def artifacts_dir(name: str) -> Path:
    """Where a browser test keeps its screenshots (``$KAPPA_TEST_ARTIFACTS`` or
    ``test-artifacts/`` in the repo, which git ignores)."""
    root = Path(os.environ.get("KAPPA_TEST_ARTIFACTS", REPO_ROOT / "test-artifacts"))
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path


# The asset page's button: "Materialize…" (partitioned assets open a dialog), "Materialize (1)…"
# with one asset selected in the lineage view.
# Not anchored: the button's accessible name also carries its icon's label.
MATERIALIZE = re.compile(r"Materialize(?: \(1\))?(?:…|\.\.\.)")


def materialize_one_partition(page: Any) -> None:
    """Materialize the asset shown, on its only partition: the dialog then offers one run."""
    page.get_by_role("button", name=MATERIALIZE).first.click()
    # The partition picker is a dialog too (a popover): take the one launching runs.
    dialog = page.get_by_role("dialog").filter(has_text="Launch runs to materialize")
    # The dialog opens on a custom selection with no partition: pick the only version there is.
    dialog.get_by_text("Select a partition or create one").click()
    page.get_by_text("Select all (1)").click()
    dialog.get_by_text("Launch runs to materialize").first.click()  # closes the picker
    dialog.screenshot(path=str(artifacts_dir("browser") / "partition-dialog.png"))
    dialog.get_by_role("button", name=re.compile(r"^Launch (1 run|backfill)")).click()
