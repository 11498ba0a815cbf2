"""The platform home's layout, except what deployments own.

What a deployment owns (table, checkpoint, operator state, dead letters, lock, pinned code,
alignment cap, log, quality results) is laid out in one place, ``streaming.deployment.record``.
Here: a pipeline's live pointer and its switch history (named after the pipeline), the cut log
shared by every deployment, the Dagster
instance, the embedded broker (its configuration and its log), the Spark cluster's scratch space
and the processes' pids and logs.
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

    # -- shared cut points of the log (streaming.kafka.cuts) -----------------------------------

    @property
    def cuts(self) -> Path:
        """The cut log: positions of the log every deployment's batches stop at."""
        return self.root / "cuts" / "cuts.jsonl"

    # -- quality results (a deployment's own: streaming.deployment.record) ---------------------

    @property
    def quality(self) -> Path:
        return self.root / "quality"

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

    # -- the engine (streaming.engine) ---------------------------------------------------------

    @property
    def engine_address(self) -> Path:
        """Where the running engine listens, its pid and the token it asks for (private)."""
        return self.root / "run" / "engine.json"

    @property
    def engine_lock(self) -> Path:
        """Held while an engine starts, so two clients never start two engines."""
        return self.root / "run" / "engine.lock"

    # -- the run host (assets.run_host) --------------------------------------------------------

    @property
    def run_host_address(self) -> Path:
        """Where the run host listens, its pid and the key it asks for (private)."""
        return self.root / "run" / "run-host.json"

    @property
    def run_host_lock(self) -> Path:
        """Held while a run host starts, so two launchers never start two."""
        return self.root / "run" / "run-host.lock"

    @property
    def dagster(self) -> Path:
        """``DAGSTER_HOME``: the Dagster instance's storage and its ``dagster.yaml``."""
        return self.root / "dagster"


def as_home(value: Home | str | os.PathLike[str]) -> Home:
    """``value`` as a :class:`Home` (settings and flags give the root as a path)."""
    return value if isinstance(value, Home) else Home(Path(value))
