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
