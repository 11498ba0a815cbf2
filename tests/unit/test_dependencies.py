"""The packages depend on each other one way: quality <- streaming <- {assets, kappa}.

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
STREAMING_SUBPACKAGES = ("define", "kafka", "delta", "run", "versions")


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


def _forbidden(package: str, file: str, name: str) -> bool:
    """Whether ``file`` (in ``package``) may not import ``name``."""
    top = _top(name)
    if top not in OURS or top == package:
        if package == "streaming" and file.startswith("streaming/define/"):
            others = [f"streaming.{p}" for p in STREAMING_SUBPACKAGES if p != "define"]
            return _under(name, *others)
        return False
    if top in ("tests", "bench"):
        return True
    allowed = {
        "quality": (),
        "streaming": ("quality",),
        "assets": ("quality", "streaming", "kappa.processes"),
        "kappa": ("quality", "streaming", "assets.names"),
        "pipelines": ("quality", "streaming.define"),
    }[package]
    return not _under(name, *allowed)


@pytest.mark.parametrize("package", PRODUCT)
def test_each_package_imports_only_what_the_layering_allows(package: str) -> None:
    wrong = [
        f"{file}:{line} imports {name}"
        for file, line, name in _imports(package)
        if _forbidden(package, file, name)
    ]
    assert wrong == [], "\n".join(wrong)


def test_bench_does_not_import_the_tests() -> None:
    wrong = [f"{f}:{line} imports {n}" for f, line, n in _imports("bench") if _top(n) == "tests"]
    assert wrong == [], "\n".join(wrong)


def test_the_rule_catches_a_forbidden_import() -> None:
    assert _forbidden("streaming", "streaming/run/job.py", "kappa.cli")
    assert _forbidden("assets", "assets/tables.py", "kappa.cli_versions")
    assert _forbidden("quality", "quality/compare.py", "streaming.settings")
    assert _forbidden("streaming", "streaming/define/pipeline.py", "streaming.kafka.log")
    assert _forbidden("pipelines", "pipelines/customers.py", "streaming.run.runner")
    assert not _forbidden("kappa", "kappa/deployments.py", "assets.names")
