"""The README's pipeline examples are code a user copies: each one runs as written.

Every ```python block of the README and of docs/pipelines.md (the rest of the demo) that
declares a ``PIPELINE`` is executed on its own, as a module would be, and must leave a valid
``streaming.define.Pipeline`` behind without a deprecated spelling (a transform, a window in
milliseconds, ``stream.window``, ``publish="..."``). The other blocks read a running platform's
tables and are shown, not run.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from streaming.define import Pipeline

ROOT = Path(__file__).resolve().parents[2]
MANUALS = (ROOT / "README.md", ROOT / "docs" / "pipelines.md")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def pipeline_examples() -> list[tuple[str, str]]:
    """(file name, source) of every pipeline example."""
    return [
        (manual.name, block)
        for manual in MANUALS
        for block in BLOCK.findall(manual.read_text())
        if "PIPELINE = " in block
    ]


def test_the_readme_has_pipeline_examples() -> None:
    shown = {name for name, _ in pipeline_examples()}
    assert shown == {"README.md", "pipelines.md"}, "the README shows how a pipeline is written"


@pytest.mark.parametrize("number", range(len(pipeline_examples())))
def test_a_readme_pipeline_example_runs_as_written(number: int) -> None:
    manual, source = pipeline_examples()[number]
    namespace: dict[str, object] = {"__name__": f"readme_example_{number}"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        exec(compile(source, f"{manual} example {number}", "exec"), namespace)
    pipeline = namespace["PIPELINE"]
    assert isinstance(pipeline, Pipeline)
    assert pipeline.name and pipeline.version and pipeline.plan is not None
