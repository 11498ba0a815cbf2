"""Each deployment keeps running the code it was first started with.

The first start of (pipeline, version) copies the pipeline's module source to
``$KAPPA_HOME/code/<pipeline>__<version>.py`` and runs that copy; so do later starts of that
deployment (a crash restart, a retry, a rollback target brought back up). So after the code
location is reloaded with a new version, the old version still runs its own transform against its
own checkpoint and table, never the new code. The declared version running code that differs
from its pin is reported: the change needs a new version to be deployed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from streaming.atomic_file import write_atomically
from streaming.define.pipeline import Pipeline
from streaming.errors import VersionError
from streaming.home import Home
from streaming.run.deployment import Deployment


class PinnedCodeError(VersionError):
    """A deployment's pinned code cannot be loaded."""


@dataclass(frozen=True)
class PinnedPipeline:
    pipeline: Pipeline
    pinned_at: Path | None  # None when the pipeline is not a module's PIPELINE (not pinnable)
    warning: str = ""


def pinned_pipeline(home: Home, declared: Pipeline, version: str | None) -> PinnedPipeline:
    """The pipeline code a deployment of ``declared``'s pipeline at ``version`` (default: its
    declared version) runs."""
    deployment = Deployment(declared.name, version or declared.version, home)
    path = deployment.code_pin_path
    if path.exists():
        pinned = dataclasses.replace(_load(path, deployment), version=deployment.version)
        warning = ""
        if deployment.version == declared.version and pinned.fingerprint != declared.fingerprint:
            warning = (
                f"{deployment.id}: the pipeline's code changed (fingerprint {pinned.fingerprint} "
                f"-> {declared.fingerprint}) but its version is still {declared.version}; the "
                "deployment keeps running the code it was started with. Bump VERSION to deploy "
                "the change side by side"
            )
        return PinnedPipeline(pinned, path, warning)
    source = _module_source(declared)
    if source is None:
        return PinnedPipeline(dataclasses.replace(declared, version=deployment.version), None)
    write_atomically(path, source)
    # The first run loads the copy as well: a function's source (and so the fingerprint each
    # commit records) is read from its file, and the user's file may change while this runs.
    pinned = dataclasses.replace(_load(path, deployment), version=deployment.version)
    return PinnedPipeline(pinned, path)


def _module_source(pipeline: Pipeline) -> str | None:
    """The source of the module whose PIPELINE this is, or None for a pipeline built elsewhere."""
    if pipeline.transform is not None:
        module = sys.modules.get(getattr(pipeline.transform, "__module__", "") or "")
    else:  # a plan is data, not code: find the module that declares it
        module = next(
            (m for m in list(sys.modules.values()) if getattr(m, "PIPELINE", None) is pipeline),
            None,
        )
    if module is None or getattr(module, "PIPELINE", None) is not pipeline:
        return None
    return inspect.getsource(module)


def _load(path: Path, deployment: Deployment) -> Pipeline:
    # One module per pin file (several homes can pin the same deployment id in one process).
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"kappa_pinned_{deployment.pipeline}_{digest}"
    if module_name in sys.modules:
        module: ModuleType = sys.modules[module_name]
    else:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            msg = f"cannot load the pinned code of {deployment.id} from {path}"
            raise PinnedCodeError(msg)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(module)  # Python workers cannot import the copy
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            msg = (
                f"the pinned code of {deployment.id} ({path}) does not load: {exc}; a pipeline "
                "module must load from a copy of its file (absolute imports only, what it "
                "imports still installed); fix that, or retire the deployment"
            )
            raise PinnedCodeError(msg) from None
    pipeline = getattr(module, "PIPELINE", None)
    if not isinstance(pipeline, Pipeline) or pipeline.name != deployment.pipeline:
        msg = f"{path} does not define PIPELINE for {deployment.pipeline}"
        raise PinnedCodeError(msg)
    return pipeline
