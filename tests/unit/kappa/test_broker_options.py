"""The embedded broker's JVM options: the class archive when built, the heap, the cluster id."""

from __future__ import annotations

from pathlib import Path

from bench.support.settings import private_settings
from kappa.broker import archive_options, archive_path, min_heap, new_cluster_id


def test_the_class_archive_is_mapped_once_built_and_never_while_being_built(tmp_path: Path):
    settings = private_settings(tmp_path / "home", **{"cache_dir": str(tmp_path / "cache")})
    jars = [tmp_path / "kafka.jar"]
    assert archive_options(settings, "java", jars) == []
    path = archive_path(settings, "java", jars)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"jsa")
    assert f"-XX:SharedArchiveFile={path}" in archive_options(settings, "java", jars)
    dumping = private_settings(
        tmp_path / "home",
        **{
            "cache_dir": str(tmp_path / "cache"),
            "broker.java_options": "-XX:ArchiveClassesAtExit=x",
        },
    )
    assert archive_options(dumping, "java", jars) == []


def test_another_java_or_other_jars_get_another_archive(tmp_path: Path):
    settings = private_settings(tmp_path / "home")
    one = archive_path(settings, "/usr/bin/java", [tmp_path / "a.jar"])
    assert one != archive_path(settings, "/usr/bin/java", [tmp_path / "b.jar"])
    assert one == archive_path(settings, "/usr/bin/java", [tmp_path / "a.jar"])


def test_the_initial_heap_is_a_quarter_of_the_maximum_and_at_least_64m():
    assert [min_heap(h) for h in ("1g", "384m", "128m", "2G")] == ["256m", "96m", "64m", "512m"]


def test_cluster_ids_are_22_url_safe_characters_and_new_each_time():
    ids = {new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    # kafka-storage's argument parser takes "-..." for an option (one id in 64 would start so).
    assert not any(i.startswith("-") for i in ids)
    assert all(len(i) == 22 and i.replace("-", "").replace("_", "").isalnum() for i in ids)
