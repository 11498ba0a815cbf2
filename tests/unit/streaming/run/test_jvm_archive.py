"""Which JVM options the class archive adds (building it needs a JVM: the bootstrap does that)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.run import jvm_archive


def test_no_archive_no_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(tmp_path / "missing.jsa"))
    assert jvm_archive.java_options() == ""


def test_an_archive_is_mapped_quietly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"x")
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(archive))
    options = jvm_archive.java_options().split()
    assert f"-XX:SharedArchiveFile={archive}" in options
    assert "-Xlog:cds=off" in options


def test_off_switches_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, "off")
    assert jvm_archive.archive_path() is None
    assert jvm_archive.java_options() == ""


def test_default_place_is_per_installation_under_the_user_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = jvm_archive.archive_path()
    assert path is not None and path.parent == tmp_path / "kappa" / "jvm"
    assert path.name.startswith("spark-") and path.suffix == ".jsa"
    assert jvm_archive.archive_path() == path  # stable for the same Java and Spark
