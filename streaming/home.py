"""The platform home's layout: every path under it is derived here, once.

A deployment's state is named after its id (``<pipeline>__<version>``): its table, checkpoint,
operator state, dead letters, lock, pinned code, alignment cap and log. A pipeline's live pointer
and its switch history are named after the pipeline. Quality results, the Dagster instance, the
embedded broker (its configuration and its log) and the processes' pids and logs have their own
folders.
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

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    def checkpoint(self, deployment_id: str) -> Path:
        return self.checkpoints / deployment_id

    @property
    def dead_letter_tables(self) -> Path:
        return self.root / "dead_letters"

    def dead_letters(self, deployment_id: str) -> Path:
        return self.dead_letter_tables / deployment_id

    @property
    def operator_states(self) -> Path:
        return self.root / "state"

    def operator_state(self, deployment_id: str) -> Path:
        """A stateful deployment's operator state (``streaming.state.StateStore``)."""
        return self.operator_states / deployment_id

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    def lock(self, deployment_id: str) -> Path:
        return self.locks / f"{deployment_id}.lock"

    @property
    def code_pins(self) -> Path:
        return self.root / "code"

    def code_pin(self, deployment_id: str) -> Path:
        return self.code_pins / f"{deployment_id}.py"

    @property
    def alignment_caps(self) -> Path:
        return self.root / "alignment"

    def alignment_cap(self, deployment_id: str) -> Path:
        return self.alignment_caps / f"{deployment_id}.json"

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

    @property
    def quality(self) -> Path:
        return self.root / "quality"

    def validation(self, deployment_id: str) -> Path:
        return self.quality / "validations" / f"{deployment_id}.json"

    def validation_docs(self, deployment_id: str) -> Path:
        return self.quality / "docs" / deployment_id

    def comparison(self, pipeline: str, old: str, new: str) -> Path:
        return self.quality / "comparisons" / f"{pipeline}__{old}__{new}.json"

    def comparison_position(self, pipeline: str, old: str, new: str) -> Path:
        """Where the comparison of ``old`` and ``new`` was made: input offsets, table versions."""
        return self.comparison(pipeline, old, new).with_suffix(".at.json")

    def comparisons_of(self, pipeline: str, new: str) -> list[Path]:
        """The saved comparisons of version ``new`` with any other version, by name."""
        return sorted((self.quality / "comparisons").glob(f"{pipeline}__*__{new}.json"))

    def comparison_docs(self, pipeline: str, old: str, new: str) -> Path:
        return self.quality / "docs" / f"{pipeline}__{old}__{new}"

    # -- everything derived from the log ---------------------------------------------------------

    def derived_state(self) -> list[Path]:
        """The folders whose contents were derived from the log (what ``kappa reset`` deletes):
        tables, dead letters, checkpoints, pinned code, live pointers, alignment caps, quality
        results and deployment locks. The log, the process logs and Dagster's history are kept."""
        return [
            self.tables,
            self.dead_letter_tables,
            self.checkpoints,
            self.code_pins,
            self.live,
            self.alignment_caps,
            self.quality,
            self.locks,
        ]

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
    def running_deployments(self) -> Path:
        """The deployments Dagster was running when the platform last looked (to resume them)."""
        return self.root / "run" / "deployments.json"

    # -- the embedded broker ----------------------------------------------------------------

    @property
    def broker(self) -> Path:
        """The embedded broker's configuration and cluster id (``kappa.broker``)."""
        return self.root / "broker"

    @property
    def broker_data(self) -> Path:
        """The embedded broker's log: every topic's records (Kafka's ``log.dirs``)."""
        return self.broker / "data"

    # -- the Spark standalone cluster --------------------------------------------------------

    @property
    def cluster(self) -> Path:
        """The cluster's scratch space: the workers' work directories (application files)."""
        return self.root / "cluster"

    def cluster_pid(self, process: str) -> Path:
        """The pid of a cluster process (``spark-master``, ``spark-worker-1``, ...)."""
        return self.root / "run" / f"{process}.pid"

    @property
    def dagster(self) -> Path:
        """``DAGSTER_HOME``: the Dagster instance's storage and its ``dagster.yaml``."""
        return self.root / "dagster"


def as_home(value: Home | str | os.PathLike[str]) -> Home:
    """``value`` as a :class:`Home` (settings and flags give the root as a path)."""
    return value if isinstance(value, Home) else Home(Path(value))
