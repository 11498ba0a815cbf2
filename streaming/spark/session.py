"""The SparkSession a pipeline runs in: its settings, and building it (only when asked).

Spark's defaults come from the platform settings (``platform/kappa.yaml``); only the invariants
every session needs are fixed here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from streaming.settings import Settings, SparkSettings
from streaming.spark.jvm_archive import java_options

# Whatever the user configures: a missing Arrow path must fail loudly rather than silently take
# the slow path, times are UTC, and a stop request lets the batch in flight finish.
REQUIRED_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
}

JAVA_OPTIONS = "spark.driver.extraJavaOptions"

# Gives a SparkSession when called: the platform's own, or one a Dagster resource holds.
SparkProvider = Callable[[], SparkSession]
WORKER_WRAPPER = Path(__file__).with_name("worker_python.sh")


def session_conf(settings: Settings, app_name: str = "kappa", archive: bool = True) -> dict:
    """Every setting of a platform session, master and application name included (the form
    ``dagster_pyspark``'s resources take). With ``archive``, a new driver JVM maps the class
    archive of ``streaming.spark.jvm_archive`` if one was built."""
    spark = settings.spark
    conf = {"spark.master": spark.master, "spark.app.name": app_name, "spark.log.level": "ERROR"}
    conf.update({**spark.conf, **REQUIRED_CONF})
    if archive:
        options = java_options(spark, settings.cache_dir)
        extra = " ".join(filter(None, [conf.get(JAVA_OPTIONS, ""), options]))
        if extra:
            conf[JAVA_OPTIONS] = extra
    return conf


def python_environment(spark: SparkSettings) -> dict[str, str]:
    """The environment that points Spark's Python processes at this Python (``PYSPARK_PYTHON``
    and friends), so the project's packages and confluent-kafka are importable in them. On a
    cluster the same environment must exist on the executors (see the README)."""
    env = {"PYSPARK_DRIVER_PYTHON": sys.executable}
    if spark.pyspark_python and spark.pyspark_python != str(WORKER_WRAPPER):
        return {**env, "PYSPARK_PYTHON": spark.pyspark_python}
    import pyspark

    installed = Path(pyspark.__file__).resolve().parent
    other_spark = spark.spark_home and Path(spark.spark_home).resolve() != installed
    if other_spark or not os.access(WORKER_WRAPPER, os.X_OK):
        return {**env, "PYSPARK_PYTHON": sys.executable}
    # The workers go through worker_python.sh, which puts the installed pyspark ahead of Spark's
    # zipped copy of the same release: they load cached bytecode instead of compiling pyspark at
    # every start (about 1 s of CPU per process).
    return {
        **env,
        "PYSPARK_PYTHON": str(WORKER_WRAPPER),
        "KAPPA_WORKER_PYTHON": sys.executable,
        "KAPPA_WORKER_SITE": str(installed.parent),
    }


def build_spark_session(
    settings: Settings, app_name: str = "kappa", archive: bool = True
) -> SparkSession:
    """Get or create the process's SparkSession with the platform's settings, the Kafka source
    registered."""
    os.environ.update(python_environment(settings.spark))
    builder = SparkSession.builder
    for key, value in session_conf(settings, app_name, archive).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    from streaming.kafka.source import KafkaDataSource

    session.dataSource.register(KafkaDataSource)
    return session


def session_provider(settings: Settings, app_name: str = "kappa") -> SparkProvider:
    """A provider of the platform's session, built on first call."""
    return lambda: build_spark_session(settings, app_name)
