"""The platform home's layout: every path under it is derived here, once.

A deployment's state is named after its id (``<pipeline>__<version>``): its table, checkpoint,
dead letters, lock, pinned code, alignment cap and log. A pipeline's live pointer and its switch
history are named after the pipeline. Quality results, the Dagster instance and the embedded
broker's pid and logs have their own folders.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Home:
    """The platform home (``KAPPA_HOME``). ``str()`` and ``os.fspath()`` give its root."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    def __fspath__(self) -> str:
        return str(self.root)

    def __str__(self) -> str:
        return str(self.root)

    # -- a deployment's state, by deployment id -------------------------------------------------

    @property
    def tables(self) -> Path:
        return self.root / "tables"

    def table(self, deployment_id: str) -> Path:
        return self.tables / deployment_id

    def checkpoint(self, deployment_id: str) -> Path:
        return self.root / "checkpoints" / deployment_id

    def dead_letters(self, deployment_id: str) -> Path:
        return self.root / "dead_letters" / deployment_id

    def lock(self, deployment_id: str) -> Path:
        return self.root / "locks" / f"{deployment_id}.lock"

    def code_pin(self, deployment_id: str) -> Path:
        return self.root / "code" / f"{deployment_id}.py"

    def alignment_cap(self, deployment_id: str) -> Path:
        return self.root / "alignment" / f"{deployment_id}.json"

    def deployment_log(self, deployment_id: str) -> Path:
        return self.log(deployment_id)

    # -- a pipeline's live pointer -------------------------------------------------------------

    @property
    def live(self) -> Path:
        return self.root / "live"

    def live_pointer(self, pipeline: str) -> Path:
        return self.live / f"{pipeline}.json"

    def live_history(self, pipeline: str) -> Path:
        return self.live / f"{pipeline}.history.jsonl"

    def live_lock(self, pipeline: str) -> Path:
        return self.live / f"{pipeline}.lock"

    # -- quality results -----------------------------------------------------------------------

    def validation(self, deployment_id: str) -> Path:
        return self.root / "quality" / "validations" / f"{deployment_id}.json"

    def validation_docs(self, deployment_id: str) -> Path:
        return self.root / "quality" / "docs" / deployment_id

    def comparison(self, pipeline: str, old: str, new: str) -> Path:
        return self.root / "quality" / "comparisons" / f"{pipeline}__{old}__{new}.json"

    def comparison_position(self, pipeline: str, old: str, new: str) -> Path:
        """Where the comparison of ``old`` and ``new`` was made: input offsets, table versions."""
        return self.comparison(pipeline, old, new).with_suffix(".at.json")

    def comparisons_of(self, pipeline: str, new: str) -> list[Path]:
        """The saved comparisons of version ``new`` with any other version, by name."""
        return sorted((self.root / "quality" / "comparisons").glob(f"{pipeline}__*__{new}.json"))

    def comparison_docs(self, pipeline: str, old: str, new: str) -> Path:
        return self.root / "quality" / "docs" / f"{pipeline}__{old}__{new}"

    # -- processes of the platform -------------------------------------------------------------

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, name: str) -> Path:
        """The log of a process the platform starts (``broker``, ``dagster``, a deployment)."""
        return self.logs / f"{name}.log"

    @property
    def broker_pid(self) -> Path:
        return self.root / "run" / "broker.pid"

    @property
    def dagster(self) -> Path:
        """``DAGSTER_HOME``: the Dagster instance's storage and its ``dagster.yaml``."""
        return self.root / "dagster"


def as_home(value: Home | str | os.PathLike[str]) -> Home:
    """``value`` as a :class:`Home` (settings and flags give the root as a path)."""
    return value if isinstance(value, Home) else Home(Path(value))
