"""The engines side by side: how each one runs a workload, shows its progress and its output.

Every engine runs as a process of its own (a process group, so its whole tree is measured and
stopped), reads the workload's topics from offset 0 with fresh state, and is told nothing about
where the log ends: the benchmark watches its visible position (``progress``).

- ``platform``: ``python -m streaming run PIPELINE`` with a fresh platform home, its defaults
  (``local[*]``, the JVM class archive, batches of at most 250,000 records);
- ``kafka-streams``: ``PeerApp`` (``kafka_streams/``), exactly once, RocksDB state;
- ``quix``: ``quix_app.py`` in its own environment, exactly once, RocksDB state;
- ``spark``: ``spark_app.py``, Spark's Kafka source and sink around its own stateful operators,
  with the platform's Spark settings (without the platform's class archive) and its batch size.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from bench.peers import kafka_streams, quix_env
from bench.peers.outputs import read_delta, read_topic
from bench.peers.progress import DeltaCommits, GroupOffsets, Probe, SparkCheckpoint
from bench.peers.workloads import PARTITIONS, Workload
from streaming.settings import REPO_ROOT, Settings

BATCH = 250_000  # the platform's default maxOffsetsPerTrigger, given to Spark too


@dataclass(frozen=True)
class RunSpec:
    """One run of one engine on one workload."""

    workload: Workload
    run_id: str  # unique: names the consumer group, checkpoint, version, output topic
    work: Path  # this run's own directory (state, checkpoint, platform home, log)
    bootstrap: str
    continuous: bool  # False: a cold run over a backlog (the platform runs --until-caught-up)

    @property
    def output_topic(self) -> str:
        return f"peers-out-{self.run_id}"

    @property
    def partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t in self.workload.topics for p in range(PARTITIONS)]

    @property
    def log_file(self) -> Path:
        return self.work / "engine.log"


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: Path


class Engine:
    name: ClassVar[str]
    workloads: ClassVar[tuple[str, ...]] = ("latest", "fraud", "spend", "clicks")
    writes_topic: ClassVar[bool] = True  # its output is a topic the benchmark creates
    why_not: ClassVar[str] = ""  # why the workloads it does not run are not its own

    def __init__(self, settings: Settings, options: dict[str, Any]) -> None:
        self.settings = settings
        self.options = options

    def prepare(self) -> None:
        """Build or install what the engine needs, once, outside any measured time."""

    def launch(self, spec: RunSpec) -> Launch:
        raise NotImplementedError

    def probe(self, spec: RunSpec) -> Probe:
        raise NotImplementedError

    def output(self, spec: RunSpec) -> dict[Any, tuple]:
        return read_topic(spec.workload.name, spec.bootstrap, spec.output_topic)

    def topics_before_run(self, spec: RunSpec) -> list[str]:
        """Topics the run writes that must not exist before it (deleted first)."""
        return []

    def final_watermark(self, spec: RunSpec, last_ts: int) -> int:
        """The watermark the output must have reached to be complete (Spark's outer join)."""
        return 0


class Platform(Engine):
    name = "platform"
    writes_topic = False

    def version(self, spec: RunSpec) -> str:
        return spec.run_id.replace("_", "-")

    def home(self, spec: RunSpec) -> Path:
        return spec.work / "home"

    def launch(self, spec: RunSpec) -> Launch:
        mode = ["--trigger-interval", "0 seconds"] if spec.continuous else ["--until-caught-up"]
        argv = [
            sys.executable,
            "-m",
            "streaming",
            "run",
            spec.workload.pipeline,
            "--version",
            self.version(spec),
            "--no-follow-live",
            *mode,
        ]
        env = {
            **os.environ,
            "KAPPA_HOME": str(self.home(spec)),
            "KAFKA_BOOTSTRAP_SERVERS": spec.bootstrap,
            **self.options.get("platform_env", {}),
        }
        # Another checkout's code (an A/B of a code change): python -m and Spark's Python
        # workers import ``streaming`` from their working directory first.
        return Launch(argv, env, Path(self.options.get("platform_code", REPO_ROOT)))

    def _table(self, spec: RunSpec) -> Path:
        from streaming.deployment import Deployment

        return Deployment(spec.workload.pipeline, self.version(spec), self.home(spec)).table_path

    def probe(self, spec: RunSpec) -> Probe:
        return DeltaCommits(self._table(spec))

    def output(self, spec: RunSpec) -> dict[Any, tuple]:
        return read_delta(spec.workload.name, self._table(spec))

    def topics_before_run(self, spec: RunSpec) -> list[str]:
        # transactions_enriched publishes its changes; a fresh home's first batch would read
        # a previous run's topic back as a table and reconcile it (a handover).
        from streaming.define.registry import get_pipeline

        pipeline = get_pipeline(self.settings.pipelines, spec.workload.pipeline)
        return [pipeline.publish] if pipeline.publish else []


class KafkaStreams(Engine):
    name = "kafka-streams"

    def prepare(self) -> None:
        kafka_streams.build(self.settings.cache_dir)

    def launch(self, spec: RunSpec) -> Launch:
        argv = kafka_streams.command(
            self.settings.cache_dir,
            spec.workload.name,
            spec.bootstrap,
            spec.run_id,
            str(spec.work / "state"),
            spec.output_topic,
            str(self.options["commit_interval_ms"]),
            str(self.options["ks_threads"]),
        )
        return Launch(argv, dict(os.environ), spec.work)

    def probe(self, spec: RunSpec) -> Probe:
        return GroupOffsets(spec.bootstrap, spec.run_id, spec.partitions)


class Quix(Engine):
    name = "quix"

    def prepare(self) -> None:
        quix_env.python(self.settings.cache_dir)

    def launch(self, spec: RunSpec) -> Launch:
        argv = quix_env.command(
            self.settings.cache_dir,
            spec.workload.name,
            spec.bootstrap,
            spec.run_id,
            str(spec.work / "state"),
            spec.output_topic,
            str(self.options["commit_interval_ms"] / 1000),
        )
        return Launch(argv, dict(os.environ), spec.work)

    def probe(self, spec: RunSpec) -> Probe:
        return GroupOffsets(spec.bootstrap, spec.run_id, spec.partitions)


class Spark(Engine):
    name = "spark"
    workloads = ("spend", "clicks")
    why_not = (
        "Structured Streaming has no operator that keeps the latest row per key as a table or "
        "joins a stream with a table as of event time; either would be user code in "
        "transformWithState, not Spark's own operators"
    )

    def launch(self, spec: RunSpec) -> Launch:
        from streaming.jars import SPARK_KAFKA, classpath

        jars = ",".join(str(j) for j in classpath(self.settings.cache_dir, SPARK_KAFKA))
        conf = {
            "spark.master": self.settings.spark.master,
            **self.settings.spark.conf,
            "spark.sql.session.timeZone": "UTC",
        }
        argv = [
            sys.executable,
            "-m",
            "bench.peers.spark_app",
            spec.workload.name,
            spec.bootstrap,
            str(spec.work / "checkpoint"),
            spec.output_topic,
            jars,
            str(self.options.get("spark_batch", BATCH)),
            json.dumps(conf),
        ]
        return Launch(argv, dict(os.environ), REPO_ROOT)

    def probe(self, spec: RunSpec) -> Probe:
        return SparkCheckpoint(spec.work / "checkpoint")

    def final_watermark(self, spec: RunSpec, last_ts: int) -> int:
        # The outer join emits a click without a match in the batch after the watermark (the
        # last event time minus its 10-minute delay) passed the click's window.
        return last_ts - 10 * 60_000 if spec.workload.name == "clicks" else 0


ENGINES: dict[str, type[Engine]] = {e.name: e for e in (Platform, KafkaStreams, Quix, Spark)}


def clean(spec: RunSpec) -> None:
    shutil.rmtree(spec.work, ignore_errors=True)
