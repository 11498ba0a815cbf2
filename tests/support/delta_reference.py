"""delta-spark, the Delta protocol's reference implementation, as an independent reader of tables.

The sink writes its Delta log entries and deletion vectors itself; delta-rs and polars read them
back in the unit tests, but polars too replays the log with delta-rs. delta-spark is Delta
Lake's own reader. It runs as a small JVM program of its own (``jvm/DeltaRead.java``) rather
than in the suite's PySpark session: Delta's session extension and catalog are static settings
of a session, so adding them to the shared session would change the Spark every other test runs
on, and a reader in its own process shares no cached snapshot or file listing with the
product's Spark.

The program is compiled at first use into the cache, keyed by its sources and the bundle it is
built against, and one JVM start reads every table it is given; it maps the platform's class
archive of Spark (``streaming.spark.jvm_archive``) when there is one, which saves about a quarter
of its CPU. The bundle (``platform/jvm/delta-reference.xml``) holds delta-spark 4.4.0, built
against Spark 4.2.0, the pinned PySpark; Spark, Scala, Parquet and Hadoop come from pyspark's
own jars.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench.support.settings import SHORT_LIVED_JIT
from streaming.jars import classpath
from streaming.settings import SparkSettings
from streaming.spark.jvm_archive import java_options

BUNDLE = "delta-reference"
SOURCES = Path(__file__).parent / "jvm"
MAIN_CLASS = "DeltaRead"
LOG_CONFIG = "log4j2.properties"
HEAP = "1g"  # small tables; the JVM's default (a quarter of the machine) would crowd others out
_DONE = ".compiled"


class DeltaReadError(RuntimeError):
    """delta-spark could not be compiled or started, or refused to read a table."""


def read_tables(
    cache_dir: Path,
    paths: Sequence[str | os.PathLike[str]],
    *,
    spark: SparkSettings | None = None,
    timeout_s: float = 600.0,
) -> dict[str, list[dict[str, Any]]]:
    """Every table's current rows as delta-spark reads them, by ``str(path)``, in one JVM.

    ``spark`` gives the Java (``java_home``) and the class archive (``jvm_archive``).

    Rows are parsed from Spark's JSON with numbers that have a fraction or exponent as
    :class:`~decimal.Decimal`, so a decimal column keeps its digits (compare a double column
    after ``float()``).

    Raises:
        JvmLibraryError: the bundle is not resolved (``python -m streaming.jars``).
        DeltaReadError: compiling or running the reader failed, or a table could not be read.
    """
    spark = spark or SparkSettings()
    jars = classpath(cache_dir, BUNDLE)
    java = _tool("java", spark.java_home)
    classes = compiled(cache_dir, jars, spark.java_home)
    cp = os.pathsep.join([*_spark_jars(), *map(str, jars), str(classes)])
    names = [str(p) for p in paths]
    with tempfile.TemporaryDirectory(prefix="kappa-delta-read-") as scratch:
        command = [
            java,
            f"-Xmx{HEAP}",
            SHORT_LIVED_JIT,
            *java_options(spark, cache_dir).split(),
            f"-Dlog4j2.configurationFile={classes / LOG_CONFIG}",
            # Spark's scratch files go where they are removed with the run, whatever happens.
            f"-Djava.io.tmpdir={scratch}",
            "-cp",
            cp,
            MAIN_CLASS,
            *names,
        ]
        done = subprocess.run(
            command,
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    rows, errors, finished = _parse(done.stdout)
    if done.returncode != 0 or not finished:
        tail = " | ".join(done.stderr.strip().splitlines()[-8:])
        msg = f"delta-spark exited with code {done.returncode} before reading every table: {tail}"
        raise DeltaReadError(msg)
    if errors:
        msg = "; ".join(f"delta-spark cannot read {names[i]}: {text}" for i, text in errors.items())
        raise DeltaReadError(msg)
    return {name: rows[i] for i, name in enumerate(names)}


def compiled(cache_dir: Path, jars: Sequence[Path], java_home: str | None = None) -> Path:
    """The reader's classes (and its logging configuration), compiled into the cache unless
    there; the directory is named after the sources, the bundle and the Spark they use."""
    where = cache_dir / "classes" / f"delta-read-{_digest(jars)}"
    if (where / _DONE).is_file():
        return where
    javac = _tool("javac", java_home)
    where.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".delta-read-", dir=where.parent))
    cp = os.pathsep.join([*_spark_jars(), *map(str, jars)])
    source = SOURCES / f"{MAIN_CLASS}.java"
    command = [javac, "--release", "17", "-d", str(staging), "-cp", cp, str(source)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        msg = f"javac could not compile {source}: {done.stdout}{done.stderr}".strip()
        raise DeltaReadError(msg)
    shutil.copy(SOURCES / LOG_CONFIG, staging / LOG_CONFIG)
    (staging / _DONE).write_text(" ".join(command[:5]) + "\n")
    try:
        staging.rename(where)
    except OSError:  # compiled meanwhile by another process: keep that one
        shutil.rmtree(staging, ignore_errors=True)
    return where


def _digest(jars: Sequence[Path]) -> str:
    import pyspark

    parts = [pyspark.__version__, *sorted({jar.parent.name for jar in jars})]
    for source in sorted(SOURCES.iterdir()):
        parts += [source.name, hashlib.sha256(source.read_bytes()).hexdigest()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _spark_jars() -> list[str]:
    """pyspark's jars (the Spark the bundle's delta-spark was built against) as Spark's launcher
    lists them, SLF4J's API first: the class archive maps only for the class path it was
    written with, and the reader's own jars come after it."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    return [*map(str, sorted(jars.glob("slf4j-api-*.jar"))), str(jars / "*")]


def _tool(name: str, java_home: str | None) -> str:
    found = shutil.which(name, path=str(Path(java_home) / "bin") if java_home else None)
    if found is None:
        msg = f"{name} is missing; the delta-spark reader needs a JDK 17+ (set JAVA_HOME)"
        raise DeltaReadError(msg)
    return found


def _parse(stdout: str) -> tuple[dict[int, list[dict[str, Any]]], dict[int, str], bool]:
    """The reader's output as (rows per table, error per table, whether it got to the end)."""
    rows: dict[int, list[dict[str, Any]]] = {}
    errors: dict[int, str] = {}
    current: list[dict[str, Any]] | None = None
    for line in stdout.splitlines():
        if line.startswith("#table "):
            current = rows.setdefault(int(line.split()[1]), [])
        elif line.startswith("#error "):
            index, _, text = line.removeprefix("#error ").partition(" ")
            errors[int(index)] = text
            current = None
        elif line == "#done":
            return rows, errors, True
        elif current is not None:
            current.append(json.loads(line, parse_float=Decimal))
        else:
            msg = f"unexpected output from the delta-spark reader: {line[:200]!r}"
            raise DeltaReadError(msg)
    return rows, errors, False
