"""The Spark cluster's process layout, without starting it: addresses, pids, logs, errors."""

from __future__ import annotations

import pytest

from bench.support.settings import private_settings
from kappa.cluster import SparkCluster
from streaming.errors import ConfigError


def test_a_stopped_cluster_reports_itself_not_running(tmp_path):
    settings = private_settings(tmp_path / "home", **{"cluster.port": 17123})
    cluster = SparkCluster(settings)
    status = cluster.status()
    assert not status.running and status.master_url == "spark://127.0.0.1:17123"
    assert "not running" in status.describe()
    assert not cluster.stop()


def test_every_process_binds_to_loopback_and_keeps_its_files_under_the_home(tmp_path):
    settings = private_settings(tmp_path / "home", **{"cluster.workers": 3})
    cluster = SparkCluster(settings)
    master = cluster._master_args()
    assert master[master.index("--host") + 1] == "127.0.0.1"
    assert cluster.worker_names() == ["spark-worker-1", "spark-worker-2", "spark-worker-3"]
    worker = cluster._worker_args("spark-worker-2")
    assert worker[1] == settings.cluster.master_url
    assert worker[worker.index("--work-dir") + 1].startswith(str(settings.home.root))
    assert settings.home.cluster_pid("spark-master").parent == settings.home.root / "run"
    env = cluster._environment()
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert env["SPARK_LOG_DIR"] == str(settings.home.logs)


def test_a_stale_pid_file_is_not_a_running_cluster(tmp_path):
    settings = private_settings(tmp_path / "home")
    pid_file = settings.home.cluster_pid("spark-master")
    pid_file.parent.mkdir(parents=True)
    pid_file.write_text("999999999")
    assert not SparkCluster(settings).status().running


def test_a_bad_worker_memory_fails_at_load_time(tmp_path):
    with pytest.raises(ConfigError, match="worker_memory"):
        private_settings(tmp_path / "home", **{"cluster.worker_memory": "lots"})
