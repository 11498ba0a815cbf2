"""A deployment runs the code pinned at its first start: the pipeline's module and every project
module it imports. Editing a topic declaration changes no running version, the fingerprint sees
the edit, and the warning names the edited file."""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from streaming.deployment import Deployment
from streaming.deployment.code_pin import pinned_pipeline
from streaming.home import Home
from streaming.settings import REPO_ROOT

TOPICS = """
from streaming.define import Topic

ORDERS = Topic(
    "orders",
    key="order_id",
    value_schema="order_id string, {fields}",
    time="ts",
    tombstones="delete",
)
"""
PIPELINE = """
from {package}.topics import ORDERS
from streaming.define import Pipeline

PIPELINE = Pipeline(name="orders", version="v1", plan=ORDERS.table().rows())
"""


@pytest.fixture
def package(tmp_path: Path) -> Iterator[Path]:
    """A user's pipeline package: ``topics.py`` declares the topic, ``orders.py`` the pipeline."""
    name = f"pins_{tmp_path.name.replace('-', '_')}"
    folder = tmp_path / "src" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "topics.py").write_text(TOPICS.format(fields="amount bigint, ts bigint"))
    (folder / "orders.py").write_text(PIPELINE.format(package=name))
    sys.path.insert(0, str(folder.parent))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder.parent))
        for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[module]


def _declared(package: Path):  # type: ignore[no-untyped-def]
    """The pipeline as the module on disk declares it now (as a code location reload does)."""
    for module in ("topics", "orders"):
        name = f"{package.name}.{module}"
        if name in sys.modules:
            importlib.reload(sys.modules[name])
        else:
            importlib.import_module(name)
    return sys.modules[f"{package.name}.orders"].PIPELINE


def _columns(pipeline) -> list[str]:  # type: ignore[no-untyped-def]
    return pipeline.table_schema.names


def test_the_pin_holds_the_imported_topics_and_an_edit_changes_no_running_version(
    package: Path, tmp_path: Path
) -> None:
    home = Home(tmp_path / "home")
    first = _declared(package)
    fingerprint = first.fingerprint  # of the code on disk when it is first asked for
    pinned = pinned_pipeline(home, first, None)
    assert pinned.pinned_at == Deployment("orders", "v1", home).code_pin_path
    pinned_files = {p.relative_to(pinned.pinned_at) for p in pinned.pinned_at.rglob("*.py")}
    assert {str(p) for p in pinned_files} == {
        f"{package.name}/__init__.py",
        f"{package.name}/topics.py",
        f"{package.name}/orders.py",
    }
    assert _columns(pinned.pipeline) == ["order_id", "amount", "ts"]

    # The topic gains a field: the declared pipeline changes, its fingerprint with it.
    fields = "amount bigint, note string, ts bigint"
    (package / "topics.py").write_text(TOPICS.format(fields=fields))
    edited = _declared(package)
    assert _columns(edited) == ["order_id", "amount", "note", "ts"]
    assert edited.fingerprint != fingerprint

    # A restart of v1 runs what it was pinned with, and says which file changed.
    again = pinned_pipeline(home, edited, None)
    assert _columns(again.pipeline) == ["order_id", "amount", "ts"]
    assert again.pipeline.fingerprint == fingerprint
    assert Deployment("orders", "v1", home).fingerprint == fingerprint
    assert f"{package.name}/topics.py changed" in again.warning
    assert f"{package.name}/orders.py" not in again.warning
    # ... and the module on disk is still the edited one for everyone else.
    assert _columns(sys.modules[f"{package.name}.orders"].PIPELINE) == _columns(edited)


def test_an_edit_of_an_imported_module_alone_changes_the_fingerprint(package: Path) -> None:
    before = _declared(package).fingerprint
    topics = package / "topics.py"
    topics.write_text(topics.read_text() + "\nHELPER = 1  # not used by the plan\n")

    assert _declared(package).fingerprint != before


DEMO_READER = '''"""Customers, as a table."""
from {package}.topics import CUSTOMERS
from streaming.define import Pipeline

PIPELINE = Pipeline(name="orders", version="v1", plan=CUSTOMERS.table().rows())


def describe() -> str:
    return "customers"
'''


def _cosmetic(source: str) -> str:
    """The same code reworded and reformatted: another module docstring, new comments and
    docstrings, every statement laid out anew (``ast.unparse``)."""
    tree = ast.parse(source)
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body
    lines = ast.unparse(ast.Module(body=body, type_ignores=[])).splitlines()
    laid_out = "\n".join(
        line + ("  # a new comment" if line.endswith(")") else "") for line in lines
    ).replace("-> str:", '-> str:\n    """A new docstring."""')
    return f'"""Reworded."""\n# A comment that was not there.\n{laid_out}\n'


def test_comments_docstrings_and_layout_change_neither_the_fingerprint_nor_the_pin(
    package: Path, tmp_path: Path
) -> None:
    home = Home(tmp_path / "home")
    (package / "topics.py").write_text((REPO_ROOT / "pipelines" / "topics.py").read_text())
    (package / "orders.py").write_text(DEMO_READER.format(package=package.name))
    first = _declared(package)
    fingerprint = first.fingerprint  # of the code on disk when it is first asked for
    pinned = pinned_pipeline(home, first, None)

    for module in ("topics.py", "orders.py"):
        before = (package / module).read_text()
        (package / module).write_text(_cosmetic(before))
        assert (package / module).read_text() != before
    cosmetic = _declared(package)
    assert cosmetic.fingerprint == fingerprint == pinned.pipeline.fingerprint
    assert cosmetic.project_code is not None and pinned.pipeline.project_code is not None
    assert cosmetic.project_code.changed_files(pinned.pipeline.project_code) == []
    assert pinned_pipeline(home, cosmetic, None).warning == ""

    # A real edit still drifts, and names only the file whose tree changed.
    orders = package / "orders.py"
    orders.write_text(orders.read_text().replace("return 'customers'", "return 'people'"))
    edited = _declared(package)
    assert edited.fingerprint != fingerprint
    warning = pinned_pipeline(home, edited, None).warning
    assert f"{package.name}/orders.py changed" in warning
    assert f"{package.name}/topics.py" not in warning
