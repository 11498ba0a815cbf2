"""Which JVM options the class archive adds (building it needs a JVM: the bootstrap does that)."""

from __future__ import annotations

from pathlib import Path

from streaming.settings import SparkSettings, load_settings
from streaming.spark import jvm_archive


def test_no_archive_no_options(tmp_path: Path) -> None:
    spark = SparkSettings(jvm_archive=str(tmp_path / "missing.jsa"))
    assert jvm_archive.java_options(spark, tmp_path) == ""


def test_an_archive_is_mapped_quietly(tmp_path: Path) -> None:
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"x")
    options = jvm_archive.java_options(SparkSettings(jvm_archive=str(archive)), tmp_path).split()
    assert f"-XX:SharedArchiveFile={archive}" in options
    assert "-Xlog:cds=off" in options


def test_off_switches_it_off() -> None:
    settings = load_settings(env={"KAPPA_JVM_ARCHIVE": "off"})
    assert jvm_archive.archive_path(settings.spark, settings.cache_dir) is None
    assert jvm_archive.java_options(settings.spark, settings.cache_dir) == ""


def test_default_place_is_per_installation_under_the_user_cache(tmp_path: Path) -> None:
    settings = load_settings(env={"XDG_CACHE_HOME": str(tmp_path)})
    path = jvm_archive.archive_path(settings.spark, settings.cache_dir)
    assert path is not None and path.parent == tmp_path / "kappa" / "jvm"
    assert path.name.startswith("spark-") and path.suffix == ".jsa"
    # stable for the same Java and Spark
    assert jvm_archive.archive_path(settings.spark, settings.cache_dir) == path
