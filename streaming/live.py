"""Which version of a pipeline is live (placeholder until versioned deployments land)."""

from __future__ import annotations

from pathlib import Path


def live_version(home: Path, pipeline: str) -> str | None:
    """The live version of ``pipeline``, or None when no version was promoted yet."""
    return None
