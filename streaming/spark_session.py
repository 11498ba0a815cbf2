"""Building the SparkSession a pipeline runs in (only when asked: never at import)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

# Settings every kappa session needs, whatever the user configures (DESIGN.md: a missing Arrow
# path must fail loudly instead of silently taking the slow path).
REQUIRED_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
}

DEFAULT_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.python.worker.reuse": "true",
    "spark.sql.adaptive.enabled": "false",
}


def build_spark_session(
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    app_name: str = "kappa",
) -> SparkSession:
    """Get or create the process's SparkSession with the platform's settings.

    The Python workers use this interpreter unless ``PYSPARK_PYTHON`` says otherwise, so the
    project's packages (and confluent-kafka) are importable in them. On a cluster the same
    environment must exist on the executors (see the README).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**DEFAULT_CONF, **dict(conf or {}), **REQUIRED_CONF}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from streaming.kafka_source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
    return spark
