"""A pipeline's code: the module that declares it and every module of the project it imports.

The project is the package of the declaring module and whatever else is neither the platform
(``streaming``, ``quality``, ``assets``, ``kappa``) nor installed (the standard library,
site-packages): the demo's ``pipelines`` package or a user's own. The modules are found by
reading their import statements (those inside functions too) and following them, parent packages
included (importing ``a.b`` runs ``a/__init__.py``), so what the pipeline runs is known without
running it. The fingerprint covers these modules by their syntax trees
(``streaming.define.syntax``: comments, docstrings and layout left out), and a deployment pins
their sources (``streaming.deployment.code_pin``).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import site
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType

from streaming.define.syntax import tree_digest

PLATFORM_PACKAGES = frozenset({"streaming", "quality", "assets", "kappa"})


@dataclass(frozen=True)
class SourceFile:
    """One module of a pipeline's code."""

    module: str  # dotted name
    is_package: bool
    source: str

    @property
    def path(self) -> str:
        """Where it lives relative to the import root, e.g. ``pipelines/topics.py``."""
        base = self.module.replace(".", "/")
        return f"{base}/__init__.py" if self.is_package else f"{base}.py"

    @property
    def sha256(self) -> str:
        """Of the file's bytes (what the pin copies)."""
        return hashlib.sha256(self.source.encode()).hexdigest()

    @cached_property
    def tree(self) -> str:
        """Of what the file means: its syntax tree without docstrings (comments, docstrings and
        formatting change nothing)."""
        return tree_digest(self.source)


@dataclass(frozen=True)
class PipelineCode:
    """The modules a pipeline runs: ``root`` declares ``PIPELINE``; ``files`` by module name."""

    root: str
    files: tuple[SourceFile, ...]

    def digest(self) -> str:
        """Of what the modules mean (their trees): a cosmetic edit leaves it as it was."""
        return self._digest(lambda f: f.tree)

    def source_digest(self) -> str:
        """Of the modules' bytes."""
        return self._digest(lambda f: f.sha256)

    def _digest(self, of: Callable[[SourceFile], str]) -> str:
        lines = [f"{f.module} {of(f)}" for f in sorted(self.files, key=lambda f: f.module)]
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()

    def changed_files(self, other: PipelineCode) -> list[str]:
        """The paths of the files whose trees differ from ``other``'s, or that only one of them
        has (a file edited only in its comments, docstrings or layout is not one)."""
        mine = {f.path: f.tree for f in self.files}
        theirs = {f.path: f.tree for f in other.files}
        return sorted(p for p in mine.keys() | theirs.keys() if mine.get(p) != theirs.get(p))


def declaring_module(pipeline: object, likely: str = "") -> ModuleType | None:
    """The module whose ``PIPELINE`` is ``pipeline``, or None for a pipeline built elsewhere
    (``likely``: the name of a module to look in first, e.g. its transform's)."""
    candidates = [sys.modules.get(likely)] if likely else []
    candidates += list(sys.modules.values())  # a plan is data: look for its declaring module
    for module in candidates:
        if module is not None and getattr(module, "PIPELINE", None) is pipeline:
            return module
    return None


def project_code(root: str) -> PipelineCode:
    """Module ``root`` and every project module it imports, directly or not, from their files.

    Raises:
        ImportError: ``root`` cannot be found.
    """
    files: dict[str, SourceFile] = {}
    pending = [root]
    own = root.split(".")[0]
    while pending:
        name = pending.pop()
        top = name.split(".")[0]
        if name in files or top in PLATFORM_PACKAGES:
            continue
        found = _project_file(name, installed_too=top == own)
        if found is None:
            continue
        files[name] = found
        pending += _parents(name)
        pending += _imported(found)
    if root not in files:
        msg = f"module {root!r} is not part of the project (installed, or the platform's own)"
        raise ImportError(msg)
    return PipelineCode(root, tuple(sorted(files.values(), key=lambda f: f.module)))


def _project_file(name: str, installed_too: bool) -> SourceFile | None:
    """The module's source, when it is a Python file of the project (``installed_too``: even
    when it is installed, as the pipeline's own package may be)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # an attribute imported by name (`from a import X`)
        return None
    if spec is None or not spec.has_location or not (spec.origin or "").endswith(".py"):
        return None
    origin = Path(spec.origin).resolve()  # type: ignore[arg-type]
    if not installed_too and any(origin.is_relative_to(p) for p in _installed_places()):
        return None
    is_package = spec.submodule_search_locations is not None
    return SourceFile(name, is_package, origin.read_text())


def _installed_places() -> list[Path]:
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    places.update(site.getsitepackages())
    places.add(site.getusersitepackages())
    return [Path(p).resolve() for p in places]


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imported(file: SourceFile) -> list[str]:
    """Every module an import statement of ``file`` may name (``from a import b``: ``a`` and,
    if it is a module, ``a.b``)."""
    package = file.module if file.is_package else file.module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(ast.parse(file.source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                try:
                    base = importlib.util.resolve_name("." * node.level + base, package)
                except ImportError:
                    continue
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names
