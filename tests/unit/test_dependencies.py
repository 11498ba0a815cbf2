"""Imports run one way, with no exception.

Between the packages: quality <- streaming <- {assets, kappa}; assets and kappa do not import
each other; pipelines use only streaming.define and quality. Inside streaming, each subpackage
imports only the foundation modules and the subpackages to its left:

    state <- operators <- define <- kafka <- delta <- spark <- deployment <- versions <- query
    <- run

The foundation (errors, settings, home, ...) imports only itself; the entry points
(``streaming/__init__``, ``__main__``, ``table_quality``) may import any of it.

Every import statement of the product is read with ``ast`` (those inside functions too), so a
forbidden import fails here with its file and line, whether or not it runs at import time.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest

from streaming.settings import REPO_ROOT

PRODUCT = ("streaming", "assets", "kappa", "quality", "pipelines")
OURS = (*PRODUCT, "bench", "tests")
ALLOWED = {
    "quality": (),
    "streaming": ("quality",),
    "assets": ("quality", "streaming"),
    "kappa": ("quality", "streaming"),
    "pipelines": ("quality", "streaming.define"),
}
LAYERS = (
    "state",
    "operators",
    "define",
    "kafka",
    "delta",
    "spark",
    "deployment",
    "versions",
    "query",
    "run",
)
FOUNDATION = (
    "atomic_file",
    "dagster_names",
    "dotted",
    "errors",
    "home",
    "jars",
    "processes",
    "settings",
    "wait",
)
ENTRY_POINTS = ("__init__", "__main__", "table_quality")


def _imports(package: str) -> Iterator[tuple[str, int, str]]:
    """(file, line, imported module) for every absolute import under ``package``."""
    for path in sorted((REPO_ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                yield str(path.relative_to(REPO_ROOT)), node.lineno, name


def _top(name: str) -> str:
    return name.split(".")[0]


def _under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _part(module: str) -> str:
    """The part of streaming a module path (``streaming/run/job.py``) or dotted name belongs
    to: its subpackage, or the top-level module's name."""
    parts = module.removesuffix(".py").replace("/", ".").split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _rank(part: str) -> int:
    """0 for the foundation, then 1, 2, ... along the layers; the entry points last."""
    if part in FOUNDATION:
        return 0
    if part in LAYERS:
        return 1 + LAYERS.index(part)
    if part in ENTRY_POINTS:
        return 1 + len(LAYERS)
    msg = f"streaming.{part} is in no layer: add it to the README's map and to this test"
    raise AssertionError(msg)


def _forbidden_in_streaming(file: str, name: str) -> bool:
    mine, theirs = _part(file), _part(name)
    if mine == theirs:
        return False
    if _rank(mine) == 0:  # the foundation imports only itself
        return _rank(theirs) != 0
    return _rank(theirs) > _rank(mine) or theirs in ENTRY_POINTS


def _forbidden(package: str, file: str, name: str) -> bool:
    """Whether ``file`` (in ``package``) may not import ``name``."""
    top = _top(name)
    if top not in OURS:
        return False
    if top == package:
        inside = package == "streaming" and name != "streaming"
        return inside and _forbidden_in_streaming(file, name)
    if top in ("tests", "bench"):
        return True
    return not _under(name, *ALLOWED[package])


@pytest.mark.parametrize("package", PRODUCT)
def test_each_package_imports_only_what_the_layering_allows(package: str) -> None:
    wrong = [
        f"{file}:{line} imports {name}"
        for file, line, name in _imports(package)
        if _forbidden(package, file, name)
    ]
    assert wrong == [], "\n".join(wrong)


def test_every_part_of_streaming_is_in_a_layer() -> None:
    parts = {_part(str(p.relative_to(REPO_ROOT))) for p in (REPO_ROOT / "streaming").glob("*")}
    parts -= {"__pycache__", "worker_python"}
    for part in parts:
        _rank(part)


def test_bench_does_not_import_the_tests() -> None:
    wrong = [f"{f}:{line} imports {n}" for f, line, n in _imports("bench") if _top(n) == "tests"]
    assert wrong == [], "\n".join(wrong)


def test_the_rule_catches_a_forbidden_import() -> None:
    assert _forbidden("streaming", "streaming/run/job.py", "kappa.cli")
    assert _forbidden("assets", "assets/tables.py", "kappa.cli_versions")
    assert _forbidden("assets", "assets/launcher.py", "kappa.processes")
    assert _forbidden("kappa", "kappa/deployments.py", "assets.names")
    assert _forbidden("quality", "quality/compare.py", "streaming.settings")
    assert _forbidden("pipelines", "pipelines/customers.py", "streaming.run.runner")
    assert _forbidden("streaming", "streaming/define/pipeline.py", "streaming.kafka.log")
    assert _forbidden("streaming", "streaming/versions/retire.py", "streaming.run.lock")
    assert _forbidden("streaming", "streaming/deployment/record.py", "streaming.versions.state")
    assert _forbidden("streaming", "streaming/settings.py", "streaming.define.names")
    assert _forbidden("streaming", "streaming/run/job.py", "streaming.table_quality")
    assert not _forbidden("streaming", "streaming/run/job.py", "streaming.versions.live_pointer")
    assert not _forbidden("streaming", "streaming/versions/retire.py", "streaming.deployment")
    assert not _forbidden("streaming", "streaming/operators/batch.py", "streaming.state")


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of a module that run, now or in a function: all but those under
    ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            yield from (n for child in node.orelse for n in _runtime_imports_of(child))
            continue
        yield from _runtime_imports_of(node)


def _runtime_imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _runtime_imports(node)


def _define_graph() -> dict[str, set[str]]:
    """Module of streaming.define -> the modules of streaming.define it imports at run time."""
    graph: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / "streaming" / "define").glob("*.py")):
        edges = graph.setdefault(path.stem, set())
        for node in _runtime_imports(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            )
            for name in names:
                if name == "streaming.define":
                    edges.add("__init__")
                elif name.startswith("streaming.define."):
                    module = name.split(".")[2]
                    if (REPO_ROOT / "streaming" / "define" / f"{module}.py").exists():
                        edges.add(module)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each module that reaches itself, with the way back."""
    found = []
    for start in sorted(graph):
        paths = [[start, nxt] for nxt in sorted(graph[start])]
        seen: set[str] = set()
        while paths:
            path = paths.pop()
            if path[-1] == start:
                found.append(path)
                break
            if path[-1] in seen:
                continue
            seen.add(path[-1])
            paths += [[*path, nxt] for nxt in sorted(graph.get(path[-1], ()))]
    return found


def test_the_modules_of_the_authoring_api_import_each_other_without_a_circle() -> None:
    circles = _circles(_define_graph())
    assert circles == [], "\n".join(" -> ".join(c) for c in circles)


def test_the_circle_rule_counts_imports_in_functions_but_not_for_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from streaming.define.b import B\n"
        "def f():\n    from streaming.define.c import C\n"
    )
    imported = [n.module for n in _runtime_imports(ast.parse(source))]
    assert imported == ["typing", "streaming.define.c"]
    assert _circles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b", "a"], ["b", "a", "b"]]
