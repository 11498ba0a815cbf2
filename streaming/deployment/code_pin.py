"""Each deployment keeps running the code it was first started with.

The first start of (pipeline, version) copies the pipeline's code, the module that declares it
and every project module it imports (``streaming.define.code``), into the deployment's pin folder
``code/<pipeline>__<version>/``, with ``pin.json`` listing the modules, their hashes (of the
bytes, and of the syntax tree the fingerprint covers) and the fingerprint. That start and every
later one (a crash restart, a retry, a rollback target brought back up) run the copies. So
editing a pipeline, or a module it imports such as the
topics it reads, changes no running version: the change needs a new version to be deployed, and
the declared version running code that means something else than its pin is reported, naming
the files (a change of comments, docstrings or layout is none).

The copies are imported under their own names while the pin loads (their imports of each other
resolve to the copies, not to the files on disk now), then kept in ``sys.modules`` under a name
of their own, so the modules on disk stay importable beside them. Pins load at a deployment's
start, before it runs any thread that imports project modules.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.abc
import importlib.util
import json
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

from streaming.atomic_file import write_atomically
from streaming.define.code import PipelineCode, SourceFile, declaring_module, project_code
from streaming.define.pipeline import Pipeline
from streaming.deployment.record import PIN_MANIFEST, Deployment
from streaming.errors import VersionError
from streaming.home import Home


class PinnedCodeError(VersionError):
    """A deployment's pinned code cannot be loaded."""


@dataclass(frozen=True)
class PinnedPipeline:
    pipeline: Pipeline
    pinned_at: Path | None  # None when the pipeline is not a module's PIPELINE (not pinnable)
    warning: str = ""


def pinned_pipeline(home: Home, declared: Pipeline, version: str | None) -> PinnedPipeline:
    """The pipeline code a deployment of ``declared``'s pipeline at ``version`` (default: its
    declared version) runs: its pin, made from the code on disk at its first start."""
    deployment = Deployment(declared.name, version or declared.version, home)
    folder = deployment.code_pin_path
    if not (folder / PIN_MANIFEST).exists():
        module = declaring_module(declared)
        if module is None:
            return PinnedPipeline(dataclasses.replace(declared, version=deployment.version), None)
        code = project_code(module.__name__)
        copy_code(folder, code)
        # The first run loads the copy as well: a function's source (and so the fingerprint each
        # commit records) is read from its file, and the user's file may change while this runs.
        pinned = _load(deployment, code)
        write_manifest(folder, code, pinned.fingerprint)
        return PinnedPipeline(pinned, folder)
    pinned = _load(deployment, read_pin(folder))
    warning = ""
    if deployment.version == declared.version and pinned.fingerprint != declared.fingerprint:
        warning = drift_warning(deployment, pinned, declared)
    return PinnedPipeline(pinned, folder, warning)


def drift_warning(deployment: Deployment, pinned: Pipeline, declared: Pipeline) -> str:
    """What changed in the declared code against the pin of its own version, file by file."""
    changed = []
    if pinned.project_code is not None and declared.project_code is not None:
        changed = declared.project_code.changed_files(pinned.project_code)
    what = f"{', '.join(changed)} changed" if changed else "the pipeline's declaration changed"
    return (
        f"{deployment.id}: {what} since this version was pinned (fingerprint "
        f"{pinned.fingerprint} -> {declared.fingerprint}) but its version is still "
        f"{declared.version}; the deployment keeps running the code it was started with. Bump "
        "VERSION to deploy the change side by side"
    )


def copy_code(folder: Path, code: PipelineCode) -> None:
    """Copy ``code``'s modules into ``folder``, each at its path under the import root."""
    for file in code.files:
        write_atomically(folder / file.path, file.source)


def write_manifest(folder: Path, code: PipelineCode, fingerprint: str) -> None:
    """Complete a pin. Written after the copies: a pin without one is a first start that was
    interrupted, and is made again."""
    manifest = {
        "module": code.root,
        "fingerprint": fingerprint,
        "files": {
            f.module: {"path": f.path, "sha256": f.sha256, "tree": f.tree} for f in code.files
        },
    }
    write_atomically(folder / PIN_MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))


def read_pin(folder: Path) -> PipelineCode:
    manifest = json.loads((folder / PIN_MANIFEST).read_text())
    files = []
    for module, entry in sorted(manifest["files"].items()):
        path = folder / entry["path"]
        files.append(SourceFile(module, path.name == "__init__.py", path.read_text()))
    return PipelineCode(manifest["module"], tuple(files))


def _load(deployment: Deployment, code: PipelineCode) -> Pipeline:
    """The pinned pipeline, its modules imported from the pin folder."""
    folder = deployment.code_pin_path
    # One set of modules per pin folder and content (several homes can pin the same deployment in
    # one process, and a retired version's name can be pinned again with other code).
    key = f"{folder.resolve()}\n{code.source_digest()}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    prefix = f"kappa_pinned_{deployment.pipeline}_{digest}"
    with _IMPORTING:  # importing swaps modules in sys.modules: one pin at a time
        root = sys.modules.get(f"{prefix}.{code.root}")
        if root is None:
            root = _import_pinned(folder, code, prefix, deployment)
    pipeline = getattr(root, "PIPELINE", None)
    if not isinstance(pipeline, Pipeline) or pipeline.name != deployment.pipeline:
        msg = f"{folder} does not define PIPELINE for {deployment.pipeline}"
        raise PinnedCodeError(msg)
    return dataclasses.replace(pipeline, version=deployment.version).with_code(code)


def _import_pinned(
    folder: Path, code: PipelineCode, prefix: str, deployment: Deployment
) -> ModuleType:
    names = [f.module for f in code.files]
    finder = _PinFinder(folder, code.files)
    on_disk = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    # Importing a pinned module binds it on its parent package; a parent that is not pinned (a
    # namespace package) is the one on disk, and keeps what it had.
    bindings = _parent_bindings(names)
    sys.meta_path.insert(0, finder)
    try:
        importlib.import_module(code.root)
        loaded = {name: sys.modules[name] for name in names if name in sys.modules}
    except Exception as exc:
        msg = (
            f"the pinned code of {deployment.id} ({folder}) does not load: {exc}; what it "
            "imports must still be installed; fix that, or retire the deployment"
        )
        raise PinnedCodeError(msg) from None
    finally:
        sys.meta_path.remove(finder)
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(on_disk)
        _restore(bindings)
    from pyspark import cloudpickle

    for name, module in loaded.items():
        module.__name__ = f"{prefix}.{name}"
        sys.modules[module.__name__] = module
        cloudpickle.register_pickle_by_value(module)  # Python workers cannot import the copies
    return loaded[code.root]


_UNBOUND = object()
_IMPORTING = threading.Lock()


def _parent_bindings(names: Sequence[str]) -> dict[tuple[str, str], object]:
    bindings = {}
    for name in names:
        parent, _, child = name.rpartition(".")
        if parent and parent not in names and parent in sys.modules:
            bindings[parent, child] = getattr(sys.modules[parent], child, _UNBOUND)
    return bindings


def _restore(bindings: dict[tuple[str, str], object]) -> None:
    for (parent, child), value in bindings.items():
        module = sys.modules[parent]
        if value is _UNBOUND:
            module.__dict__.pop(child, None)
        else:
            setattr(module, child, value)


class _PinFinder(importlib.abc.MetaPathFinder):
    """Finds the pinned modules in the pin folder, by their own names."""

    def __init__(self, folder: Path, files: Sequence[SourceFile]) -> None:
        self.folder = folder
        self.files = {f.module: f for f in files}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        location = self.folder / file.path
        search = [str(location.parent)] if file.is_package else None
        return importlib.util.spec_from_file_location(
            fullname, location, submodule_search_locations=search
        )
