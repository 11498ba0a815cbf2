#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv. Idempotent: re-runs only when
# pyproject.toml changed since the last successful install.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

# require COMMAND PACKAGE WHY: install the Debian package when the command is missing.
require() {
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "bootstrap: $1 is missing; installing $2 ($3)" >&2
  if command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq "$2" >/dev/null
  else
    echo "bootstrap: install $2 and re-run" >&2; exit 1
  fi
}

require java openjdk-17-jre-headless "Spark and Kafka need Java 17"

stamp=.venv/.installed
if ! { [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && [ -x .venv/bin/kappa ]; }; then
  echo "bootstrap: installing the environment into .venv (about a minute)..." >&2
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[dev]"
  touch "$stamp"
fi

# The JVM libraries (the Kafka broker, Spark's Kafka connector, the tests' delta-spark reader),
# resolved from Maven Central once into ~/.cache/kappa/jars; nothing is fetched at run time.
require mvn maven "it resolves the JVM libraries once"
.venv/bin/python -m streaming.jars >/dev/null

# The embedded broker's class archive (kappa/broker_archive.py): it starts in about half the time.
if ! .venv/bin/python -m kappa.broker_archive --if-missing; then
  echo "bootstrap: could not build the broker's class archive; it will start without it" >&2
fi
# The tests' delta-spark reader (tests/support/delta_reference.py) is compiled at first use.
require javac openjdk-17-jdk-headless "the tests compile a reader"

# The Spark driver's class archive (streaming/spark/jvm_archive.py): halves SparkSession start-up.
# Built once per Java + Spark installation, under ~/.cache/kappa/jvm (about 40 s, 170 MB).
if ! .venv/bin/python -m streaming.spark.jvm_archive --if-missing; then
  echo "bootstrap: could not build the JVM class archive; Spark will start without it" >&2
fi
