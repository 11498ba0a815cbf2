"""The registry of pipelines, each declared in its own module next to its code."""

from __future__ import annotations

from streaming.errors import UnknownPipelineError
from streaming.pipeline import Pipeline
from streaming.pipelines import customer_spend, customers

PIPELINES: dict[str, Pipeline] = {p.name: p for p in (customers.PIPELINE, customer_spend.PIPELINE)}


def get_pipeline(name: str) -> Pipeline:
    try:
        return PIPELINES[name]
    except KeyError:
        known = ", ".join(sorted(PIPELINES))
        msg = f"unknown pipeline {name!r}; known pipelines: {known}"
        raise UnknownPipelineError(msg) from None


__all__ = ["PIPELINES", "get_pipeline"]
