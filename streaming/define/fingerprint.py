"""A pipeline's fingerprint: a hash of everything that shapes its output.

For a plan: its description (inputs, operator, expressions), the table schema and settings. Else
the transform's code (its syntax tree), the value schema and required fields, whether tombstones are
accepted, the table kind and schema, the pipeline's settings and its topics. For a pipeline
declared in a module, also the source of that module and of every project module it imports
(``streaming.define.code``), by their syntax trees: a helper or topic edited elsewhere changes
the fingerprint too, a comment, docstring or reformat changes nothing.
Every commit records the fingerprint it was built with, so a code change made without a new
version shows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from streaming.define.syntax import function_source

if TYPE_CHECKING:
    import pyarrow as pa

    from streaming.define.code import PipelineCode
    from streaming.define.plan import Plan
    from streaming.define.table_kinds import TableKind


class Fingerprinted(Protocol):
    """What the fingerprint reads of a pipeline (``streaming.define.pipeline.Pipeline``)."""

    # Read-only properties: a frozen dataclass's fields satisfy them.
    @property
    def project_code(self) -> PipelineCode | None: ...
    @property
    def plan(self) -> Plan | None: ...
    @property
    def transform(self) -> Callable[..., Any] | None: ...
    @property
    def value_schema(self) -> str: ...
    @property
    def required(self) -> tuple[str, ...]: ...
    @property
    def accepts_tombstones(self) -> bool: ...
    @property
    def table(self) -> TableKind: ...
    @property
    def table_schema(self) -> pa.Schema: ...
    @property
    def settings(self) -> dict[str, Any]: ...
    @property
    def topics(self) -> tuple[str, ...]: ...


def fingerprint(pipeline: Fingerprinted) -> str:
    """16 hex digits, the same in every process for the same code and declaration."""
    code = pipeline.project_code
    modules = [] if code is None else [code.digest()]
    settings = repr(sorted(pipeline.settings.items()))
    if pipeline.plan is not None:
        parts = [*modules, pipeline.plan.describe(), pipeline.table_schema.to_string(), settings]
    else:
        source = "" if pipeline.transform is None else function_source(pipeline.transform)
        parts = [
            *modules,
            source,
            pipeline.value_schema,
            repr(pipeline.required),
            repr(pipeline.accepts_tombstones),
            repr(pipeline.table),
            pipeline.table_schema.to_string(),
            settings,
            repr(pipeline.topics),
        ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
