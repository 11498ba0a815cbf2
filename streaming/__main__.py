"""``python -m streaming run PIPELINE``: run one deployment without Dagster."""

from streaming.run.job import main

if __name__ == "__main__":
    raise SystemExit(main())
