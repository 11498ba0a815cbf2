# The README's two commands: `make run` (the platform) and `make test` (the test suite).
.PHONY: run test lint bench bench-sink bench-operators faults env

env:
	@bash scripts/bootstrap.sh

run: env
	.venv/bin/kappa up $(ARGS)

# `make test WORKERS=2` spreads the test files over two pytest-xdist processes, a file's tests on
# one worker so its fixtures stay shared. The default is one process: on the 2-core machine the
# suite is CPU-bound and two workers were not faster (README, Tests).
WORKERS ?= 0

test: env
	.venv/bin/ruff check .
	.venv/bin/python -m pytest -n $(WORKERS) --dist loadfile

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
bench-operators: env
	.venv/bin/python -m bench.operators_bench $(ARGS)

# The sink's per-batch cost at 0.1, 1 and 10 M rows against the merge path (bench/sink_bench.py).
bench-sink: env
	.venv/bin/python -m bench.sink_bench $(ARGS)
