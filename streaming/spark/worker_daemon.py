"""Spark's Python worker daemon, started with the platform's task code loaded and frozen.

Spark forks every Python worker from one daemon per executor (``pyspark.daemon``), and a reused
worker runs a full garbage collection after every task. That collection walks every object the
interpreter tracks, most of them the modules' own (pyspark, pyarrow, the platform's operators):
with many deployments' small tasks, a third of the workers' CPU went to it. Here the daemon
imports the code every platform task runs and moves what it allocated to the permanent generation
(``gc.freeze``) before it forks: the collection after a task then walks only what tasks created,
the workers start with that code loaded, and they share its memory pages with the daemon instead
of copying the ones a collection would have written to.

Spark runs it as ``python -m streaming.spark.worker_daemon <worker module>`` when
``spark.python.daemon.module`` names it, as ``platform/kappa.yaml`` does.
"""

from __future__ import annotations

import gc
import importlib

# What the platform's tasks import: the planned batches' partition tasks, what they write and
# publish with, and the Kafka source's readers. A worker needs none of it to start.
TASK_MODULES = (
    "pyspark.worker",
    "streaming.run.partition_task",
    "streaming.run.executor_writes",
    "streaming.run.publisher_host",
    "streaming.kafka.source",
    "streaming.kafka.reader",
    "streaming.kafka.decode",
)


def main() -> None:
    import pyspark.daemon

    for module in TASK_MODULES:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()
    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
