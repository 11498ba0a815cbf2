"""The registry of pipelines, each declared as ``PIPELINE`` in its own module.

The modules come from the settings (``pipelines`` in ``platform/kappa.yaml``, or
``KAPPA_PIPELINES``). They are imported when first asked for, never at import of this module,
and again in a new process (a reloaded Dagster code location is one).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from streaming.define.pipeline import Pipeline
from streaming.errors import PipelineRegistryError, UnknownPipelineError

_cache: dict[tuple[str, ...], dict[str, Pipeline]] = {}


def registry(modules: Sequence[str]) -> dict[str, Pipeline]:
    """Every pipeline the modules declare, by name (the same dict on every call in a process)."""
    key = tuple(modules)
    if key not in _cache:
        _cache[key] = _load(key)
    return _cache[key]


def forget_loaded() -> None:
    """Forget the pipelines loaded so far: the next call imports their modules (for a process
    that removed them from ``sys.modules`` because they changed on disk)."""
    _cache.clear()


def _load(modules: tuple[str, ...]) -> dict[str, Pipeline]:
    if not modules:
        msg = "no pipeline modules are configured: list them under pipelines (or KAPPA_PIPELINES)"
        raise PipelineRegistryError(msg)
    found: dict[str, Pipeline] = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            msg = (
                f"pipelines (KAPPA_PIPELINES): cannot import pipeline module {name!r} ({exc}); "
                "list importable modules"
            )
            raise PipelineRegistryError(msg) from None
        pipeline = getattr(module, "PIPELINE", None)
        if not isinstance(pipeline, Pipeline):
            msg = (
                f"pipelines (KAPPA_PIPELINES): module {name!r} must define PIPELINE = Pipeline(...)"
            )
            raise PipelineRegistryError(msg)
        if pipeline.name in found:
            msg = (
                f"pipelines (KAPPA_PIPELINES): two modules declare the pipeline "
                f"{pipeline.name!r}; names must be unique"
            )
            raise PipelineRegistryError(msg)
        found[pipeline.name] = pipeline
    return found


def get_pipeline(modules: Sequence[str], name: str) -> Pipeline:
    pipelines = registry(modules)
    try:
        return pipelines[name]
    except KeyError:
        known = ", ".join(sorted(pipelines))
        msg = f"unknown pipeline {name!r}; known pipelines: {known}"
        raise UnknownPipelineError(msg) from None


def pipeline_names(modules: Sequence[str]) -> list[str]:
    return sorted(registry(modules))


def all_topics(modules: Sequence[str]) -> list[str]:
    """Every topic some registered pipeline reads."""
    return sorted({t for p in registry(modules).values() for t in p.topics})


def published_topics(modules: Sequence[str]) -> list[str]:
    """Every topic some registered pipeline writes (its changelog or its stream output)."""
    return sorted({t for p in registry(modules).values() for t in p.output_topics})
