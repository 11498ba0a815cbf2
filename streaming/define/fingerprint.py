"""A pipeline's fingerprint: a hash of everything that shapes its output.

For a plan: its description (inputs, operator, expressions), the table schema and settings. Else
the transform's source code, the value schema and required fields, whether tombstones are
accepted, the table kind and schema, the pipeline's settings and its topics. For a pipeline
declared in a module, also the source of that module and of every project module it imports
(``streaming.define.code``): a helper or topic edited elsewhere changes the fingerprint too.
Every commit records the fingerprint it was built with, so a code change made without a new
version shows.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streaming.define.pipeline import Pipeline


def fingerprint(pipeline: Pipeline) -> str:
    """16 hex digits, the same in every process for the same code and declaration."""
    code = pipeline.project_code
    modules = [] if code is None else [code.digest()]
    if pipeline.plan is not None:
        parts = [
            *modules,
            pipeline.plan.describe(),
            pipeline.table_schema.to_string(),
            repr(sorted(pipeline.settings.items())),
        ]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    parts = [
        *modules,
        inspect.getsource(pipeline.transform),  # type: ignore[arg-type]
        pipeline.value_schema,
        repr(pipeline.required),
        repr(pipeline.accepts_tombstones),
        repr(pipeline.table),
        pipeline.table_schema.to_string(),
        repr(sorted(pipeline.settings.items())),
        repr(pipeline.topics),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
