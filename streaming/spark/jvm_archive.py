"""A class-data-sharing (CDS) archive for the Spark driver JVM: SparkSessions start faster.

Most of a SparkSession's start-up is the JVM loading and verifying Spark's classes. A JDK 13+ JVM
can write the classes it loaded into an archive when it exits (``-XX:ArchiveClassesAtExit``) and
map that archive at its next start (``-XX:SharedArchiveFile``). Measured on the 2-core machine of
the README: session start 6.3-8.9 s without, 4.0-4.4 s with; the first job 2.9-4.5 s without,
1.7-2.0 s with.

``python -m streaming.spark.jvm_archive`` builds the archive once per Java and Spark installation
(the bootstrap runs it); :func:`java_options` adds it to the driver's options when it exists. An
archive that does not fit this JVM or class path costs nothing but the time: the JVM checks it
and starts without it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

from streaming.atomic_file import publish_written
from streaming.jars import java_binary
from streaming.settings import Settings, SparkSettings, load_settings


def archive_path(spark: SparkSettings, cache_dir: Path) -> Path | None:
    """Where this Java and Spark installation's archive lives; None if switched off."""
    configured = spark.jvm_archive
    if configured.lower() == "off":
        return None
    if configured:
        return Path(configured)
    import pyspark

    java = java_binary(spark.java_home)
    identity = "\n".join(
        [os.path.realpath(java), pyspark.__version__, str(Path(pyspark.__file__).parent)]
    )
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return cache_dir / "jvm" / f"spark-{pyspark.__version__}-{digest}.jsa"


def java_options(spark: SparkSettings, cache_dir: Path) -> str:
    """Driver JVM options that map the archive, or "" when there is none."""
    path = archive_path(spark, cache_dir)
    if path is None or not path.is_file():
        return ""
    # -Xlog:cds=off: a stale archive is a silent fallback, not a warning on every start.
    return f"-XX:SharedArchiveFile={path} -Xlog:cds=off -Xlog:cds+dynamic=off"


def build(settings: Settings, timeout_s: float = 600.0) -> Path | None:
    """Build the archive (a child process runs ``streaming.spark.warm_up`` and exits)."""
    path = archive_path(settings.spark, settings.cache_dir)
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "streaming.spark.warm_up", str(partial)],
        check=True,
        timeout=timeout_s,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    publish_written(partial, path, "the Spark driver's class archive")
    print(f"JVM class archive: {path} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m streaming.spark.jvm_archive", description=__doc__
    )
    parser.add_argument("--if-missing", action="store_true", help="only if there is none yet")
    args = parser.parse_args(argv)
    settings = load_settings()
    path = archive_path(settings.spark, settings.cache_dir)
    if path is None:
        print("the JVM class archive is off (KAPPA_JVM_ARCHIVE=off)", file=sys.stderr)
        return 0
    if args.if_missing and path.is_file():
        return 0
    build(settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
