# The README's two commands: `make run` (the platform) and `make test` (the test suite).
.PHONY: run test lint bench bench-sink bench-operators bench-source bench-peers bench-platform bench-capacity faults env

env:
	@bash scripts/bootstrap.sh

run: env
	.venv/bin/kappa up $(ARGS)

# The test files are spread over WORKERS pytest-xdist processes, a file's tests on one worker so
# its fixtures stay shared; WORKERS=0 runs one process. Two, because one process leaves about a
# third of the 2-core machine idle while it waits on Spark, Dagster and process starts
# (bench/RESULTS.md, What the suite cost). One worker takes the long files, the other the short
# ones (tests/support/heavy_and_light.py), not xdist's order by test count.
WORKERS ?= 2

test: env
	.venv/bin/ruff check .
	.venv/bin/python -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder

lint: env
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

# The fault-injection run (bench/faults.py): kills, poison, disk and broker faults, PASS/FAIL table.
faults: env
	.venv/bin/python -m bench.faults $(ARGS)

# The performance benchmark (bench/perf.py): baseline, cold, steady state, latency, rebuild,
# memory, with PASS/FAIL against the targets. Options: make bench ARGS="--events 10000000".
bench: env
	.venv/bin/python -m bench.perf $(ARGS)

# The stateful operators against hand-rolled Python (bench/operators_bench.py): events/s, ratio.
# ARGS="--spark": the stateful pipelines through Spark with 1 and 2 executors against the
# hand-rolled Python consuming the same log from a broker (bench/operators_spark.py).
bench-operators: env
	.venv/bin/python -m bench.operators_bench $(ARGS)

# The sink's per-batch cost at 0.1, 1 and 10 M rows against the merge path (bench/sink_bench.py).
bench-sink: env
	.venv/bin/python -m bench.sink_bench $(ARGS)

# Spark's own Kafka source against the platform's Python Data Source (bench/source_bench.py).
bench-source: env
	.venv/bin/python -m bench.source_bench $(ARGS)

# The platform against Kafka Streams, Quix Streams and Spark's own operators on the same logs
# (bench/peers/): cold, steady state, latency at a fixed rate, memory, each output verified.
# The first run builds the Kafka Streams app and the Quix Streams environment into the cache.
bench-peers: env
	.venv/bin/python -m bench.peers $(ARGS)

# The whole demo live at once on one engine from `kappa up` (bench/platform_load.py): time to
# first commit, lag, load, memory, Ctrl-C and the next start's resume. An A/B of a setting:
# make bench-platform ARGS="--set spark.master=local[4]".
bench-platform: env
	.venv/bin/python -m bench.platform_load $(ARGS)

# How many deployments one engine carries by its number of executors (bench/engine_capacity.py):
# the engine alone on a standalone cluster of 1 and 2 one-core workers, deployments added in steps.
bench-capacity: env
	.venv/bin/python -m bench.engine_capacity $(ARGS)
