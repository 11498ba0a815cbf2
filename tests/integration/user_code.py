"""A user's own pipeline package, written by a test: the demo's customers pipeline at a chosen
version and plan change, importable by the platform's processes through PYTHONPATH."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_CUSTOMERS = '''"""customers, as a user's pipeline module (written by the test)."""
from dataclasses import replace

import pyarrow.compute as pc

from pipelines import customers as base
from quality.rules import ComparisonPolicy

VERSION = "{version}"

PLAN = base.PLAN{change}

PIPELINE = replace(base.PIPELINE, version=VERSION, plan=PLAN{options})
'''


def customers_module(version: str, change: str = "", options: str = "") -> str:
    """The module's source: ``change`` is appended to the demo plan (a method chain, e.g.
    ``.with_columns(...)``), ``options`` to the ``replace`` of the demo pipeline
    (``, name=value``)."""
    return _CUSTOMERS.format(version=version, change=change, options=options)


@contextmanager
def user_package(root: Path, package: str, customers: str) -> Iterator[Path]:
    """``root/package`` holding ``customers.py``, importable while the context lasts (children
    started meanwhile inherit PYTHONPATH)."""
    folder = root / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "customers.py").write_text(customers)
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), saved) if p)
    try:
        yield folder
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
