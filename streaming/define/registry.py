"""The registry of pipelines, each declared in its own module next to its code.

By default the registry holds the demo pipelines. ``KAPPA_PIPELINES`` replaces them with a
comma-separated list of importable modules, each defining ``PIPELINE``. The registry is read
when first asked for, never at import, and again after a code-location reload (a fresh process).
"""

from __future__ import annotations

import importlib
import os

from streaming.define.pipeline import Pipeline
from streaming.errors import PipelineRegistryError, UnknownPipelineError

ENV = "KAPPA_PIPELINES"
BUILTIN = ("pipelines.customers", "pipelines.customer_spend")

_cache: dict[tuple[str, ...], dict[str, Pipeline]] = {}


def pipeline_modules() -> tuple[str, ...]:
    raw = os.environ.get(ENV, "")
    return tuple(m.strip() for m in raw.split(",") if m.strip()) or BUILTIN


def registry() -> dict[str, Pipeline]:
    """Every registered pipeline by name (the same dict on every call in one process)."""
    modules = pipeline_modules()
    if modules not in _cache:
        _cache[modules] = _load(modules)
    return _cache[modules]


def _load(modules: tuple[str, ...]) -> dict[str, Pipeline]:
    found: dict[str, Pipeline] = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            msg = f"{ENV}: cannot import pipeline module {name!r} ({exc}); list importable modules"
            raise PipelineRegistryError(msg) from None
        pipeline = getattr(module, "PIPELINE", None)
        if not isinstance(pipeline, Pipeline):
            msg = f"{ENV}: module {name!r} must define PIPELINE = Pipeline(...)"
            raise PipelineRegistryError(msg)
        if pipeline.name in found:
            msg = f"{ENV}: two modules declare the pipeline {pipeline.name!r}; names must be unique"
            raise PipelineRegistryError(msg)
        found[pipeline.name] = pipeline
    return found


def get_pipeline(name: str) -> Pipeline:
    pipelines = registry()
    try:
        return pipelines[name]
    except KeyError:
        known = ", ".join(sorted(pipelines))
        msg = f"unknown pipeline {name!r}; known pipelines: {known}"
        raise UnknownPipelineError(msg) from None


def pipeline_names() -> list[str]:
    return sorted(registry())


def all_topics() -> list[str]:
    """Every topic some registered pipeline reads."""
    return sorted({t for p in registry().values() for t in p.topics})


__all__ = ["ENV", "all_topics", "get_pipeline", "pipeline_names", "registry"]
