"""The test settings cap the JIT of every Spark JVM they start, children included; benchmarks of
throughput opt out."""

from __future__ import annotations

from pathlib import Path

from bench.support.settings import SHORT_LIVED_JIT, private_settings
from streaming.settings import load_settings
from streaming.spark.session import JAVA_OPTIONS, session_conf


def test_a_child_process_started_from_test_settings_caps_its_jit(tmp_path: Path):
    settings = private_settings(tmp_path / "home")
    child = load_settings(env=settings.to_env())  # what a deployment subprocess reads
    conf = session_conf(child, archive=False)
    assert conf[JAVA_OPTIONS] == SHORT_LIVED_JIT
    assert conf["spark.executor.extraJavaOptions"] == SHORT_LIVED_JIT


def test_full_jit_and_explicit_java_options_are_left_alone(tmp_path: Path):
    assert JAVA_OPTIONS not in private_settings(tmp_path / "a", full_jit=True).spark.conf
    own = private_settings(tmp_path / "b", **{f"spark.conf.{JAVA_OPTIONS}": "-Xss4m"})
    assert own.spark.conf[JAVA_OPTIONS] == "-Xss4m"
