"""JVM libraries resolved from Maven Central once, into a cache, and found there at run time.

A bundle is a Maven project file under ``platform/jvm/``: ``kafka-broker.xml`` (the embedded
Apache Kafka broker), ``spark-kafka.xml`` (Spark's Kafka connector for the pinned PySpark) and
``delta-reference.xml`` (delta-spark, the test suite's reference reader of Delta tables).
The bootstrap resolves them with ``python -m streaming.jars`` (Maven's
``dependency:copy-dependencies``) into ``<cache>/jars/<bundle>-<digest>/``; the digest covers the
project file, so a changed pin is resolved afresh and an old one stays untouched. Nothing is
fetched at run time: a bundle missing from the cache is an error that says to run the bootstrap.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from streaming.errors import JvmLibraryError
from streaming.settings import REPO_ROOT, load_settings

BUNDLES = REPO_ROOT / "platform" / "jvm"
KAFKA_BROKER = "kafka-broker"
SPARK_KAFKA = "spark-kafka"
_DONE = ".resolved"


def java_binary(java_home: str | None) -> str:
    """The ``java`` that runs the platform's JVMs: ``java_home``'s, else the one on PATH."""
    where = str(Path(java_home) / "bin") if java_home else None
    return shutil.which("java", path=where) or "java"


def project_file(bundle: str) -> Path:
    path = BUNDLES / f"{bundle}.xml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in BUNDLES.glob("*.xml")))
        msg = f"no JVM bundle {bundle!r} in {BUNDLES} (known: {known})"
        raise JvmLibraryError(msg)
    return path


def bundle_dir(cache_dir: Path, bundle: str) -> Path:
    """Where ``bundle`` is (or would be) resolved: named after its project file's content."""
    digest = hashlib.sha256(project_file(bundle).read_bytes()).hexdigest()[:12]
    return cache_dir / "jars" / f"{bundle}-{digest}"


def classpath(cache_dir: Path, bundle: str) -> list[Path]:
    """The resolved jars of ``bundle``, sorted by name.

    Raises:
        JvmLibraryError: the bundle was never resolved here (the bootstrap does it once).
    """
    where = bundle_dir(cache_dir, bundle)
    if not (where / _DONE).is_file():
        msg = (
            f"the JVM libraries of {bundle!r} are not in {where}; run `make env` once (it "
            f"resolves them from Maven Central), or `python -m streaming.jars {bundle}`"
        )
        raise JvmLibraryError(msg)
    return sorted(where.glob("*.jar"))


def resolve(cache_dir: Path, bundle: str, maven: str = "mvn") -> Path:
    """Resolve ``bundle`` into the cache unless it is there; returns its directory."""
    where = bundle_dir(cache_dir, bundle)
    if (where / _DONE).is_file():
        return where
    if shutil.which(maven) is None:
        msg = f"Maven ({maven}) is needed once to resolve {bundle!r}; install it and run again"
        raise JvmLibraryError(msg)
    where.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{bundle}-", dir=where.parent))
    cmd = [
        maven,
        "-q",
        "-B",
        "-f",
        str(project_file(bundle)),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        msg = f"Maven could not resolve {bundle!r}: " + " | ".join(tail)
        raise JvmLibraryError(msg)
    (staging / _DONE).write_text(" ".join(cmd[4:6]) + "\n")
    try:
        staging.rename(where)
    except OSError:  # resolved meanwhile by another process: keep that one
        shutil.rmtree(staging, ignore_errors=True)
    return where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m streaming.jars", description="Resolve the platform's JVM libraries."
    )
    parser.add_argument("bundles", nargs="*", help="bundles to resolve (default: all)")
    args = parser.parse_args(argv)
    cache_dir = load_settings().cache_dir
    bundles = args.bundles or sorted(p.stem for p in BUNDLES.glob("*.xml"))
    try:
        for bundle in bundles:
            print(f"{bundle}: {resolve(cache_dir, bundle)}")
    except JvmLibraryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
