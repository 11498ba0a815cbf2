"""What a pipeline is: its input topics, the shape of its events, its logic and its table.

A pipeline module declares one :class:`Pipeline` next to its code, in one of two forms:

- a per-batch ``transform``: the platform decodes raw Kafka records of the topics it reads
  (declared once as :class:`Topic`: value schema, required fields, what a null value means),
  dead-lettering what does not parse, hands the good ones to ``transform`` once per
  micro-batch, and merges the result into the compacted table as ``table`` says;
- a stateful ``plan`` (``streaming.define.plan``): topics, value schemas, the table kind and the
  table schema all derive from the plan, and the platform runs its operator with durable state.

Either way the table's columns are declared once (``table_schema``, or the plan's), and its
quality spec (key, exact schema) derives from them: a pipeline gives only its domain rules.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from streaming.define.code import PipelineCode, declaring_module, project_code
from streaming.define.fingerprint import fingerprint
from streaming.define.names import validate_pipeline_name, validate_version
from streaming.define.plan import Plan
from streaming.define.table_kinds import ChangeRows, TableKind
from streaming.define.topic import Topic
from streaming.define.value_schema import check_required, ddl_of, parse_value_schema
from streaming.errors import DefineError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True, kw_only=True)
class Pipeline:
    """A streaming pipeline: topics in, one compacted table out.

    Attributes:
        name: the pipeline and table name (lower-case identifier).
        version: the version of the transform's logic; bump it when the output changes.
        topics: the Kafka topics it reads, as their :class:`Topic` declarations (a transform's
            topics share one value schema); read back as names.
        value_schema: DDL of the JSON value's fields (``streaming.define.value_schema``); a
            record whose fields do not have exactly these types is dead-lettered. Taken from
            the topics when they are declarations.
        required: value fields that must be present and non-null, else the record is
            dead-lettered (from the topics, likewise).
        accepts_tombstones: whether a null value is meaningful (a delete) or a bad record (from
            the topics' ``tombstones``, likewise).
        transform: decoded records of one micro-batch -> rows for the table (see TableKind).
        table: how rows merge into the table.
        table_schema: the table's Arrow schema (its key first).
        plan: a stateful plan instead of ``transform``; it fills ``topics``, ``table`` and
            ``table_schema`` (leave them and the value schema fields out).
        publish: a topic the live version publishes the table's changes to (a compacted
            changelog: key, row as JSON, null on delete; a composite key as compact JSON);
            read it with :meth:`output_topic` (a table keyed by one column).
        settings: anything else that shapes the output; part of the fingerprint.
        quality: the table's domain rules (e.g. ``(Between("n", 1),)``); the quality spec's key
            and schema derive from the table. Read the result as ``quality_spec``.
        comparison: thresholds and expected changes for comparing a new version with the live
            one (``quality.rules.ComparisonPolicy``); the defaults when None.
        promotion: ``"auto"``: a candidate that caught up and passed every blocking comparison
            check becomes live by itself; ``"manual"``: it waits for a promote job or command.
    """

    name: str
    version: str
    topics: tuple[str | Topic, ...] = ()  # read back as the topics' names
    value_schema: str = ""
    required: tuple[str, ...] = ()
    accepts_tombstones: bool = False
    transform: Callable[[DataFrame], DataFrame] | None = None
    table: TableKind = None  # type: ignore[assignment]  # filled from the plan when None
    table_schema: pa.Schema = None  # type: ignore[assignment]  # filled from the plan when None
    plan: Plan | None = None
    publish: str | None = None
    description: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    quality: Any = None
    comparison: Any = None
    promotion: Literal["manual", "auto"] = "manual"
    # The table's quality spec (``quality.rules.TableSpec``): its key and schema and the rules.
    quality_spec: Any = field(init=False, repr=False, compare=False, default=None)
    # The modules it runs when they are not the ones on disk now (a deployment's pinned code).
    code: PipelineCode | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        validate_pipeline_name(self.name)
        validate_version(self.version)
        if self.plan is not None:
            self._from_plan(self.plan)
        elif self.transform is None:
            msg = f"pipeline {self.name}: give either a transform or a plan"
            raise DefineError(msg)
        else:
            self._from_topics()
        if not isinstance(self.table, TableKind):
            msg = f"pipeline {self.name}: table must be a table kind (LatestPerKey, Accumulate)"
            raise DefineError(msg)
        if self.publish is not None and self.plan is None:
            msg = (
                f"pipeline {self.name}: publish needs a plan; a transform's changes are written "
                "by the executors and never gathered into one transaction to publish. Declare "
                "the pipeline with a plan (e.g. topic.table().rows()), or leave publish unset "
                "and read its table from another pipeline"
            )
            raise DefineError(msg)
        if self.table_schema.names[0] != self.table.key:
            msg = (
                f"pipeline {self.name}: the table schema must start with its key {self.table.key!r}"
            )
            raise DefineError(msg)
        try:  # the value schema and required fields, checked as the source will decode them
            if self.plan is None:
                check_required(parse_value_schema(self.value_schema), self.required)
        except ValueError as exc:
            raise DefineError(f"pipeline {self.name}: {exc}") from exc
        object.__setattr__(self, "quality_spec", self._quality_spec())
        if self.promotion not in ("manual", "auto"):
            msg = f"pipeline {self.name}: promotion must be 'manual' or 'auto', not "
            msg += repr(self.promotion)
            raise DefineError(msg)

    def _from_plan(self, plan: Plan) -> None:
        if not isinstance(plan, Plan) or self.transform is not None:
            msg = (
                f"pipeline {self.name}: plan must be a Plan (e.g. topic.stream().join_as_of(...)), "
            )
            msg += "and a pipeline with a plan has no transform"
            raise DefineError(msg)
        object.__setattr__(self, "topics", plan.topics)
        object.__setattr__(self, "table", ChangeRows(key=plan.key[0], also=plan.key[1:]))
        object.__setattr__(self, "table_schema", plan.table_schema())

    def _from_topics(self) -> None:
        """A transform whose topics are declarations decodes their value schema."""
        declared = [t for t in self.topics if isinstance(t, Topic)]
        if not declared:
            return
        if len(declared) != len(self.topics):
            msg = f"pipeline {self.name}: give its topics as Topic declarations or as names"
            raise DefineError(msg)
        shapes = {(t.value_schema, t.required, t.tombstones) for t in declared}
        if len(shapes) > 1:
            msg = (
                f"pipeline {self.name}: a transform decodes one value schema; its topics declare "
                "different ones (or other required fields or tombstones): read them with a plan"
            )
            raise DefineError(msg)
        if self.value_schema or self.required or self.accepts_tombstones:
            msg = (
                f"pipeline {self.name}: its topics declare the value schema, the required fields "
                "and what a null value means; leave value_schema, required and "
                "accepts_tombstones out"
            )
            raise DefineError(msg)
        first = declared[0]
        object.__setattr__(self, "topics", tuple(t.name for t in declared))
        object.__setattr__(self, "value_schema", first.value_schema)
        object.__setattr__(self, "required", first.required)
        object.__setattr__(self, "accepts_tombstones", first.changelog)

    def _quality_spec(self) -> Any:
        """The table's quality spec: its key and schema, and the declared rules."""
        from quality.errors import SpecError
        from quality.rules import Rule, TableSpec

        if isinstance(self.quality, TableSpec):
            if self.plan is not None:
                msg = (
                    f"pipeline {self.name}: a plan's table schema derives from its topics, and so "
                    "does its quality spec; give only the rules, e.g. "
                    "quality=(Between('txn_count', min_value=1),)"
                )
                raise DefineError(msg)
            warnings.warn(
                f"pipeline {self.name}: a whole TableSpec declares the table's key and columns a "
                "second time; give only its rules (quality=(NotNull('name'), ...)), the key and "
                "schema derive from the table",
                DeprecationWarning,
                stacklevel=4,
            )
            return self.quality
        rules = (self.quality,) if isinstance(self.quality, Rule) else tuple(self.quality or ())
        keys = self.table.keys
        try:
            ddl = ddl_of(self.table_schema)
            columns = {f.name: f.type_name for f in parse_value_schema(ddl)}
            return TableSpec(
                name=self.name, key=keys[0] if len(keys) == 1 else keys, schema=columns, rules=rules
            )
        except (SpecError, ValueError) as exc:
            raise DefineError(f"pipeline {self.name}: {exc}") from exc

    def output_topic(self) -> Topic:
        """The published changelog as a topic another pipeline reads (as a table)."""
        if self.publish is None:
            msg = f"pipeline {self.name} publishes no topic: set publish='<topic>'"
            raise DefineError(msg)
        if len(self.table.keys) > 1:
            msg = (
                f"pipeline {self.name}: its topic is keyed by the composite key "
                f"({', '.join(self.table.keys)}) as JSON, which a topic input cannot read back as "
                "columns; read the table of a pipeline keyed by one column"
            )
            raise DefineError(msg)
        return Topic(
            self.publish,
            key=self.table.key,
            value_schema=ddl_of(self.table_schema),
            tombstones="delete",
        )

    def with_code(self, code: PipelineCode) -> Pipeline:
        """This pipeline, running ``code`` (the modules a deployment pinned)."""
        pipeline = dataclasses.replace(self)
        object.__setattr__(pipeline, "code", code)
        return pipeline

    @cached_property
    def project_code(self) -> PipelineCode | None:
        """The module declaring it and the project modules that module imports
        (``streaming.define.code``); None for a pipeline not declared by a module."""
        if self.code is not None:
            return self.code
        module = declaring_module(self)
        return None if module is None else project_code(module.__name__)

    @cached_property
    def fingerprint(self) -> str:
        """A hash of everything that shapes the output (see ``streaming.define.fingerprint``)."""
        return fingerprint(self)
