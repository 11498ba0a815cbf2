"""The Spark standalone cluster: a master and workers started from the installed pyspark.

``kappa cluster start`` runs ``spark-class`` for the master and each worker, every one in its own
process group, bound to 127.0.0.1, with its pid and log under the platform home (the workers'
application files under ``<home>/cluster``). Pipelines run on it unchanged when ``spark.master``
is the cluster's URL (``KAPPA_SPARK_MASTER=spark://127.0.0.1:7077``): the Kafka source is read
and the table's data files are written in the executors' Python, the driver only commits.
The executors run this interpreter, so the project's packages are importable in them.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kappa.errors import ClusterError
from streaming.processes import pid_alive, port_open, stop_process_group
from streaming.settings import Settings

MASTER = "spark-master"


@dataclass(frozen=True)
class ClusterStatus:
    master_url: str
    ui_url: str
    master_pid: int | None
    worker_pids: dict[str, int | None]
    alive_workers: int  # as the master reports them

    @property
    def running(self) -> bool:
        return self.master_pid is not None

    def describe(self) -> str:
        if not self.running:
            return f"Spark cluster not running (expected at {self.master_url})"
        workers = ", ".join(
            f"{name} {'pid ' + str(pid) if pid else 'stopped'}"
            for name, pid in self.worker_pids.items()
        )
        return (
            f"Spark cluster running at {self.master_url} (master pid {self.master_pid}, status "
            f"{self.ui_url}); {self.alive_workers} worker(s) alive: {workers}"
        )


def spark_home() -> Path:
    """The installed pyspark, which ships ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class SparkCluster:
    """Start, stop and inspect the cluster described by ``settings.cluster``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.config = settings.cluster
        self.home = settings.home

    @property
    def master_url(self) -> str:
        return self.config.master_url

    @property
    def ui_url(self) -> str:
        return f"http://{self.config.host}:{self.config.ui_port}"

    def worker_names(self) -> list[str]:
        return [f"spark-worker-{i}" for i in range(1, self.config.workers + 1)]

    def status(self) -> ClusterStatus:
        master = self._live_pid(MASTER)
        workers = {name: self._live_pid(name) for name in self.worker_names()}
        alive = 0
        if master is not None:
            state = self.master_state()
            alive = sum(w.get("state") == "ALIVE" for w in state.get("workers", []))
        return ClusterStatus(self.master_url, self.ui_url, master, workers, alive)

    def master_state(self) -> dict[str, Any]:
        """The master's own account (its JSON status page); empty when it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=2.0) as response:
                return json.loads(response.read())
        except (OSError, ValueError):
            return {}

    def start(self, timeout_s: float = 120.0) -> ClusterStatus:
        """Start the master and every worker not running yet; wait until all are ALIVE."""
        if self._live_pid(MASTER) is None:
            self._check_free(self.config.port, "KAPPA_CLUSTER_PORT")
            self._check_free(self.config.ui_port, "KAPPA_CLUSTER_UI_PORT")
            self._spawn(MASTER, self._master_args())
            self._wait(lambda: self.master_state().get("status") == "ALIVE", timeout_s, "master")
        for name in self.worker_names():
            if self._live_pid(name) is None:
                self._spawn(name, self._worker_args(name))
        self._wait(lambda: self.status().alive_workers >= self.config.workers, timeout_s, "workers")
        return self.status()

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stop the workers, then the master (their process groups); True if any was running."""
        stopped = False
        for name in [*self.worker_names(), MASTER]:
            stopped |= self.stop_process(name, timeout_s)
        return stopped

    def stop_process(self, name: str, timeout_s: float = 20.0) -> bool:
        """Stop one cluster process (``spark-master`` or ``spark-worker-N``) and its children."""
        pid = self._live_pid(name)
        self.home.cluster_pid(name).unlink(missing_ok=True)
        if pid is None:
            return False
        stop_process_group(pid, timeout_s)
        return True

    # -- starting processes ---------------------------------------------------------------

    def _master_args(self) -> list[str]:
        return [
            "org.apache.spark.deploy.master.Master",
            *("--host", self.config.host, "--port", str(self.config.port)),
            *("--webui-port", str(self.config.ui_port)),
        ]

    def _worker_args(self, name: str) -> list[str]:
        work = self.home.cluster / name
        work.mkdir(parents=True, exist_ok=True)
        return [
            "org.apache.spark.deploy.worker.Worker",
            self.master_url,
            *("--host", self.config.host, "--cores", str(self.config.worker_cores)),
            *("--memory", self.config.worker_memory, "--work-dir", str(work)),
            # port 0: each worker's status page on a free port, so several workers fit on one host
            *("--webui-port", "0"),
        ]

    def _environment(self) -> dict[str, str]:
        from streaming.spark.session import python_environment

        home = spark_home()
        env = {
            **os.environ,
            **python_environment(self.settings.spark),
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": self.config.host,
            "SPARK_LOG_DIR": str(self.home.logs),
            "SPARK_WORKER_DIR": str(self.home.cluster),
            # executors import the project's packages from this checkout
            "PYTHONPATH": os.pathsep.join(filter(None, [_project_root(), os.getenv("PYTHONPATH")])),
        }
        if self.settings.spark.java_home:
            env["JAVA_HOME"] = self.settings.spark.java_home
        return env

    def _spawn(self, name: str, args: list[str]) -> None:
        log_file = self.home.log(name)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        pid_file = self.home.cluster_pid(name)
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "ab") as log:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._environment(),
                start_new_session=True,
            )
        pid_file.write_text(str(proc.pid))

    def _wait(self, condition: Any, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._live_pid(MASTER) is None:
                msg = f"the Spark master exited; see {self.home.log(MASTER)}"
                raise ClusterError(msg)
            if condition():
                return
            time.sleep(0.2)
        msg = f"the Spark {what} did not come up within {timeout_s:.0f} s; see {self.home.logs}"
        raise ClusterError(msg)

    def _check_free(self, port: int, setting: str) -> None:
        if port_open(self.config.host, port):
            msg = f"port {port} on {self.config.host} is in use by another process; set {setting}"
            raise ClusterError(msg)

    def _live_pid(self, name: str) -> int | None:
        try:
            pid = int(self.home.cluster_pid(name).read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if pid_alive(pid) else None


def _project_root() -> str:
    return str(Path(__file__).resolve().parent.parent)
