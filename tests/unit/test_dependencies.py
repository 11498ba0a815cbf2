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
    "table_quality",  # the quality suite on a table: run by the engine, the CLI and Dagster
    "engine",
)
FOUNDATION = (
    "atomic_file",
    "dagster_names",
    "dotted",
    "errors",
    "home",
    "jars",
    "processes",
    "redaction",
    "settings",
    "wait",
)
ENTRY_POINTS = ("__init__", "__main__")


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


def test_nothing_run_outside_pytest_imports_the_tests() -> None:
    """Benchmarks run as programs: they import the product and their own support
    (``bench.support``: settings, producers, reference replays), never ``tests``."""
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


def _is_type_checking(node: ast.stmt) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): imports only a type checker runs."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
    return name == "TYPE_CHECKING"


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.stmt) and _is_type_checking(child):
            for other in child.orelse:
                yield other
                yield from _statements(other)
            continue
        yield child
        yield from _statements(child)


def _module_files() -> dict[str, str]:
    """Dotted module name -> file, for every product module (a package is its ``__init__``)."""
    files = {}
    for package in PRODUCT:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            parts = path.relative_to(REPO_ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = str(path.relative_to(REPO_ROOT))
    return files


def _import_graph() -> dict[str, set[str]]:
    """Product file -> the product files its import statements name, at any depth in the file
    (in functions too) but outside ``if TYPE_CHECKING:``. ``from package import name`` names
    the submodule when ``name`` is one, else the package's ``__init__``."""
    modules = _module_files()
    graph: dict[str, set[str]] = {file: set() for file in modules.values()}
    for module, file in modules.items():
        package = module if file.endswith("__init__.py") else module.rpartition(".")[0]
        tree = ast.parse((REPO_ROOT / file).read_text(), filename=file)
        for node in _statements(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                named = [f"{base}.{alias.name}" for alias in node.names]
                targets = [name if name in modules else base for name in named]
            else:
                continue
            for target in targets:
                if target in modules and modules[target] != file:
                    graph[file].add(modules[target])
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (its files in import order, the first repeated at the end) per group of two or
    more files that all reach each other through imports (a strongly connected component)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_in(graph, group) for group in sorted(groups, key=min)]


def _described(graph: dict[str, set[str]], cycle: list[str]) -> str:
    """The cycle, and the other files of its group (each on a cycle with it) if any."""
    group = {node for node in graph if _reaches(graph, cycle[0], node)}
    group = {node for node in group if _reaches(graph, node, cycle[0])}
    others = sorted(group - set(cycle))
    return " -> ".join(cycle) + (f" (in a circle with {', '.join(others)})" if others else "")


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return goal in seen


def _cycle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest cycle through the group's first file, within the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & group):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(group)}")


def test_no_product_files_import_each_other_in_a_circle() -> None:
    graph = _import_graph()
    cycles = [_described(graph, cycle) for cycle in _cycles(graph)]
    assert cycles == [], "files that import each other in a circle:\n" + "\n".join(cycles)


def test_the_cycle_finder_names_a_circle_and_skips_type_checking_imports() -> None:
    graph = {"a.py": {"b.py"}, "b.py": {"c.py"}, "c.py": {"a.py"}, "d.py": {"a.py"}}
    assert _cycles(graph) == [["a.py", "b.py", "c.py", "a.py"]]
    assert _cycles({"a.py": {"b.py"}, "b.py": set()}) == []
    code = ast.parse(
        "import x\nif TYPE_CHECKING:\n    import y\nelse:\n    import z\ndef f():\n    import w\n"
    )
    imported = {a.name for n in _statements(code) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {"x", "z", "w"}
