"""``python -m streaming run PIPELINE``: run one deployment without Dagster (see streaming.cli)."""

from streaming.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
