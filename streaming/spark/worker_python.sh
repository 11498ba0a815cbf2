#!/bin/sh
# The interpreter Spark starts for its Python processes in local mode (see session.py).
#
# Spark puts its zipped copy of pyspark (SPARK_HOME/python/lib/pyspark.zip) first on their
# PYTHONPATH. Python cannot cache bytecode compiled from a zip, so each of these processes
# (data source planning, the streaming source, the worker daemon) would compile pyspark again:
# about 1 s of CPU each. KAPPA_WORKER_SITE is the directory of the installed pyspark, the same
# release as the zip, whose bytecode is cached; putting it first skips the recompilation.
PYTHONPATH="${KAPPA_WORKER_SITE}${PYTHONPATH:+:$PYTHONPATH}" exec "$KAPPA_WORKER_PYTHON" "$@"
