"""The Kafka Streams peer, built at first use into the cache: never at run time, never committed.

``kafka_streams/pom.xml`` names its libraries; Maven copies them from Maven Central into
``<cache>/jars/kafka-streams-peer-<digest>/`` (``dependency:copy-dependencies``, as the platform
resolves its own JVM bundles in ``streaming.jars``), and ``javac`` compiles the one source file
against them into ``<cache>/classes/kafka-streams-peer-<digest>/``. The digest covers the pom and
the source, so an edit builds afresh beside the old build.

Why not ``mvn package``: a packaged jar needs Maven's compiler, resources, jar and surefire
plugins resolved from Central on first use, for one file; the dependency plugin is already in
the local repository (the bootstrap used it), and javac takes about 2 s. The application runs
from the class directory and the copied jars, like ``tests/support/jvm/DeltaRead.java``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCES = Path(__file__).with_name("kafka_streams")
POM = SOURCES / "pom.xml"
MAIN_CLASS = "PeerApp"
_DONE = ".built"
# Warnings and errors, with the time (the state changes the app prints carry it too).
LOGGING = [
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
]


class BuildError(RuntimeError):
    """Maven or javac failed; the message carries their last lines."""


def digest() -> str:
    parts = []
    for source in sorted(SOURCES.iterdir()):
        if source.suffix in (".xml", ".java"):
            parts += [source.name, hashlib.sha256(source.read_bytes()).hexdigest()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def build(cache_dir: Path, maven: str = "mvn") -> tuple[Path, Path]:
    """The jars directory and the classes directory, built unless already in the cache."""
    name = f"kafka-streams-peer-{digest()}"
    jars, classes = cache_dir / "jars" / name, cache_dir / "classes" / name
    if not (jars / _DONE).is_file():
        _staged(jars, lambda staging: _copy_dependencies(staging, maven))
    if not (classes / _DONE).is_file():
        _staged(classes, lambda staging: _compile(staging, jars))
    return jars, classes


def command(cache_dir: Path, *args: str, java: str = "java") -> list[str]:
    """``java ... PeerApp ARGS`` from the cache (built first if needed)."""
    jars, classes = build(cache_dir)
    classpath = os.pathsep.join([str(classes), str(jars / "*")])
    return [java, *LOGGING, "-cp", classpath, MAIN_CLASS, *args]


def _staged(target: Path, fill: object) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        fill(staging)  # type: ignore[operator]
        (staging / _DONE).write_text("built\n")
        try:
            staging.rename(target)
        except OSError:  # built meanwhile by another process: keep that one
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _copy_dependencies(staging: Path, maven: str) -> None:
    if shutil.which(maven) is None:
        msg = f"Maven ({maven}) is needed once to fetch Kafka Streams; install it and run again"
        raise BuildError(msg)
    cmd = [
        maven,
        "-q",
        "-B",
        "-f",
        str(POM),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]
    _run(cmd, "Maven could not fetch the Kafka Streams peer's libraries")


def _compile(staging: Path, jars: Path) -> None:
    if shutil.which("javac") is None:
        raise BuildError("javac is missing; the Kafka Streams peer needs a JDK 17+")
    source = SOURCES / f"{MAIN_CLASS}.java"
    cmd = ["javac", "--release", "17", "-d", str(staging), "-cp", f"{jars}/*", str(source)]
    _run(cmd, f"javac could not compile {source}")


def _run(cmd: list[str], failure: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        raise BuildError(f"{failure}: {tail}")
