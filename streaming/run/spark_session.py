"""Building the SparkSession a pipeline runs in (only when asked: never at import)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

# Settings every kappa session needs, whatever the user configures (DESIGN.md: a missing Arrow
# path must fail loudly instead of silently taking the slow path).
REQUIRED_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
}

JAVA_OPTIONS = "spark.driver.extraJavaOptions"

DEFAULT_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.python.worker.reuse": "true",
    "spark.sql.adaptive.enabled": "false",
}


def build_spark_session(
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    app_name: str = "kappa",
    archive: bool = True,
) -> SparkSession:
    """Get or create the process's SparkSession with the platform's settings.

    The Python workers use this interpreter unless ``PYSPARK_PYTHON`` says otherwise, so the
    project's packages (and confluent-kafka) are importable in them. On a cluster the same
    environment must exist on the executors (see the README). With ``archive``, a new driver JVM
    maps the class archive of ``streaming.run.jvm_archive`` if one was built.
    """
    os.environ.setdefault("PYSPARK_PYTHON", worker_python())
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {**DEFAULT_CONF, **dict(conf or {}), **REQUIRED_CONF}
    if archive:
        from streaming.run.jvm_archive import java_options

        extra = " ".join(filter(None, [settings.get(JAVA_OPTIONS, ""), java_options()]))
        if extra:
            settings[JAVA_OPTIONS] = extra
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from streaming.kafka.source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
    return spark


WORKER_WRAPPER = Path(__file__).with_name("worker_python.sh")


def worker_python() -> str:
    """The Python for Spark's Python processes: this interpreter, loading the installed pyspark.

    When Spark runs from the pip-installed pyspark (no ``SPARK_HOME`` elsewhere), the workers go
    through ``worker_python.sh``, which puts the installed pyspark ahead of Spark's zipped copy
    of the same release, so they load cached bytecode instead of compiling pyspark at every
    start (about 1 s of CPU per process). Otherwise it is simply this interpreter.
    """
    import pyspark

    installed = Path(pyspark.__file__).resolve().parent
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home and Path(spark_home).resolve() != installed:
        return sys.executable
    if not os.access(WORKER_WRAPPER, os.X_OK):
        return sys.executable
    os.environ.setdefault("KAPPA_WORKER_PYTHON", sys.executable)
    os.environ.setdefault("KAPPA_WORKER_SITE", str(installed.parent))
    return str(WORKER_WRAPPER)
