"""What a pipeline is: a plan over its input topics, the table it keeps, the topic it publishes.

A pipeline module declares one :class:`Pipeline` next to its code, with a ``plan``
(``streaming.define.plan``): the topics, value schemas, the table kind and the table schema all
derive from it, and the platform runs its operator with durable state. The table's quality spec
(key, exact schema) derives from it too: a pipeline gives only its domain rules.

The older form, a per-batch Spark ``transform`` with an explicit table kind and schema, still
runs, with a ``DeprecationWarning`` saying how to write it as a plan.
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
from streaming.define.output import output_topic, published_name
from streaming.define.plan import Plan
from streaming.define.stream_output import Stream, StreamOutput, stream_output
from streaming.define.table_kinds import Accumulate, ChangeRows, LatestPerKey, TableKind
from streaming.define.topic import Topic
from streaming.define.value_schema import check_required, ddl_of, parse_value_schema
from streaming.errors import DefineError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Transform = Callable[["DataFrame"], "DataFrame"]
Promotion = Literal["manual", "auto"]


@dataclass(frozen=True, init=False)
class Pipeline:
    """A streaming pipeline: topics in, one compacted table out.

    Declare it with keywords: ``name``, ``version``, ``plan`` and optionally ``publish``,
    ``description``, ``settings``, ``quality``, ``comparison``, ``promotion``.

    Attributes:
        name: the pipeline and table name (lower-case identifier).
        version: the version of the pipeline's logic; bump it when the output changes.
        plan: what the table is (``topic.table().rows()``, ``topic.stream().group_by(...)``,
            a join, a stateful function; see ``streaming.define``).
        topics: the names of the Kafka topics it reads (from the plan).
        table: how the table's rows change (from the plan: full rows per key).
        table_schema: the table's Arrow schema, its key first (from the plan).
        publish: the name of the topic the live version publishes the table's changes to (a
            compacted changelog: key, row as JSON, null on delete; a composite key as compact
            JSON); declare it as a :class:`Topic` (its key and value schema may be left out:
            they are the table's). Read it with :meth:`output_topic`. Given a :class:`Stream`
            instead, ``publish`` is None and ``stream`` holds it.
        stream: where the live version sends each new row, as a record keyed by one of its
            columns (``publish=Stream(topic, key=...)``); None without. Checked against the
            table as ``stream_output``.
        description: one line for people.
        settings: anything else that shapes the output; part of the fingerprint.
        quality: the table's domain rules (e.g. ``(Between("n", 1),)``); the quality spec's key
            and schema derive from the table. Read the result as ``quality_spec``.
        comparison: thresholds and expected changes for comparing a new version with the live
            one (``quality.rules.ComparisonPolicy``); the defaults when None.
        promotion: ``"auto"``: a candidate that caught up and passed every blocking comparison
            check becomes live by itself; ``"manual"``: it waits for a promote job or command.
        transform, value_schema, required, accepts_tombstones: the deprecated per-batch form:
            decoded records of one micro-batch -> rows for ``table`` (given with
            ``table_schema``), the value schema and required fields of its topics and whether a
            null value is a delete (taken from its ``topics``' declarations). Empty for a plan.
    """

    name: str
    version: str
    plan: Plan | None
    transform: Transform | None
    topics: tuple[str, ...]
    value_schema: str
    required: tuple[str, ...]
    accepts_tombstones: bool
    table: TableKind
    table_schema: pa.Schema
    publish: str | None
    stream: Stream | None
    description: str
    settings: dict[str, Any]
    quality: Any
    comparison: Any
    promotion: Promotion
    # Where the rows go as stream records, checked against the table (from ``stream``).
    stream_output: StreamOutput | None = field(init=False, repr=False, compare=False, default=None)
    # The table's quality spec (``quality.rules.TableSpec``): its key and schema and the rules.
    quality_spec: Any = field(init=False, repr=False, compare=False, default=None)
    # The modules it runs when they are not the ones on disk now (a deployment's pinned code).
    code: PipelineCode | None = field(init=False, repr=False, compare=False, default=None)

    def __init__(
        self,
        *,
        name: str,
        version: str,
        plan: Plan | None = None,
        publish: Topic | Stream | str | None = None,
        description: str = "",
        settings: dict[str, Any] | None = None,
        quality: Any = None,
        comparison: Any = None,
        promotion: Promotion = "manual",
        transform: Transform | None = None,
        topics: tuple[str | Topic, ...] = (),
        value_schema: str = "",
        required: tuple[str, ...] = (),
        accepts_tombstones: bool = False,
        table: TableKind | None = None,
        table_schema: pa.Schema | None = None,
        stream: Stream | None = None,
    ) -> None:
        declared = {
            "name": validate_pipeline_name(name),
            "version": validate_version(version),
            "plan": plan,
            "transform": transform,
            "description": description,
            "settings": dict(settings or {}),
            "quality": quality,
            "comparison": comparison,
            "promotion": promotion,
        }
        for attribute, value in declared.items():
            object.__setattr__(self, attribute, value)
        if plan is not None:
            self._from_plan(plan)
        elif transform is None:
            msg = f"pipeline {name}: give a plan, e.g. plan=TOPIC.table().rows()"
            raise DefineError(msg)
        else:
            self._from_transform(transform, topics, table, table_schema)
            self._decoding(topics, value_schema, required, accepts_tombstones)
        if self.table_schema.names[0] != self.table.key:
            msg = f"pipeline {name}: the table schema must start with its key {self.table.key!r}"
            raise DefineError(msg)
        if publish is not None and plan is None:
            msg = (
                f"pipeline {name}: publish needs a plan; a transform's changes are written "
                "by the executors and never gathered into one transaction to publish. Declare "
                "the pipeline with a plan (e.g. topic.table().rows()), or leave publish unset "
                "and read its table from another pipeline"
            )
            raise DefineError(msg)
        if isinstance(publish, Stream):  # ``stream`` is how dataclasses.replace hands it back
            publish, stream = None, publish
        output = None
        if stream is not None:
            if publish is not None:
                msg = f"pipeline {name}: publish either the table (a Topic) or a Stream"
                raise DefineError(msg)
            appends = plan is not None and plan.appends
            output = stream_output(name, stream, appends, self.table_schema)
        published = published_name(name, publish, self.table.keys, self.table_schema)
        object.__setattr__(self, "publish", published)
        object.__setattr__(self, "stream", stream)
        object.__setattr__(self, "stream_output", output)
        object.__setattr__(self, "quality_spec", self._quality_spec())
        if promotion not in ("manual", "auto"):
            msg = f"pipeline {name}: promotion must be 'manual' or 'auto', not {promotion!r}"
            raise DefineError(msg)

    def _from_plan(self, plan: Plan) -> None:
        if not isinstance(plan, Plan) or self.transform is not None:
            msg = (
                f"pipeline {self.name}: plan must be a Plan (e.g. topic.stream().join_as_of(...)), "
            )
            msg += "and a pipeline with a plan has no transform"
            raise DefineError(msg)
        derived = {
            "topics": plan.topics,
            "table": ChangeRows(key=plan.key[0], also=plan.key[1:]),
            "table_schema": plan.table_schema(),
            "value_schema": "",
            "required": (),
            "accepts_tombstones": False,
        }
        for attribute, value in derived.items():
            object.__setattr__(self, attribute, value)

    def _from_transform(
        self,
        transform: Transform,
        topics: tuple[str | Topic, ...],
        table: TableKind | None,
        table_schema: pa.Schema | None,
    ) -> None:
        if not isinstance(table, TableKind) or not isinstance(table_schema, pa.Schema):
            msg = (
                f"pipeline {self.name}: a transform needs table (a table kind: LatestPerKey, "
                "Accumulate) and table_schema (an Arrow schema); better, declare a plan"
            )
            raise DefineError(msg)
        warnings.warn(
            f"pipeline {self.name}: a per-batch transform is deprecated; declare the pipeline "
            f"with a plan instead: {_as_a_plan(table)} (see streaming.define)",
            DeprecationWarning,
            stacklevel=3,
        )
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "table_schema", table_schema)

    def _decoding(
        self,
        topics: tuple[str | Topic, ...],
        value_schema: str,
        required: tuple[str, ...],
        accepts_tombstones: bool,
    ) -> None:
        """A transform decodes one value schema: its topics' declarations, or given with names."""
        declared = [t for t in topics if isinstance(t, Topic)]
        if declared and len(declared) != len(topics):
            msg = f"pipeline {self.name}: give its topics as Topic declarations or as names"
            raise DefineError(msg)
        if declared:
            for topic in declared:
                topic.check_readable()
            shapes = {(t.value_schema, t.required, t.tombstones) for t in declared}
            if len(shapes) > 1:
                msg = (
                    f"pipeline {self.name}: a transform decodes one value schema; its topics "
                    "declare different ones (or other required fields or tombstones): read "
                    "them with a plan"
                )
                raise DefineError(msg)
            if value_schema or required or accepts_tombstones:
                msg = (
                    f"pipeline {self.name}: its topics declare the value schema, the required "
                    "fields and what a null value means; leave value_schema, required and "
                    "accepts_tombstones out"
                )
                raise DefineError(msg)
            first = declared[0]
            value_schema, required = first.value_schema, first.required
            accepts_tombstones = first.changelog
        try:  # the value schema and required fields, checked as the source will decode them
            check_required(parse_value_schema(value_schema), tuple(required))
        except ValueError as exc:
            raise DefineError(f"pipeline {self.name}: {exc}") from exc
        decoding = {
            "topics": tuple(t.name if isinstance(t, Topic) else t for t in topics),
            "value_schema": value_schema,
            "required": tuple(required),
            "accepts_tombstones": accepts_tombstones,
        }
        for attribute, value in decoding.items():
            object.__setattr__(self, attribute, value)

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
                stacklevel=3,
            )
            return self.quality
        rules = (self.quality,) if isinstance(self.quality, Rule) else tuple(self.quality or ())
        keys = self.table.keys
        try:
            ddl = ddl_of(self.table_schema)
            columns = {f.name: f.type_name for f in parse_value_schema(ddl)}
            return TableSpec(
                name=self.name,
                key=keys[0] if len(keys) == 1 else keys,
                schema=columns,
                rules=rules,
                nullable_keys=() if self.plan is None else self.plan.nullable_key,
            )
        except (SpecError, ValueError) as exc:
            raise DefineError(f"pipeline {self.name}: {exc}") from exc

    @property
    def output_topics(self) -> tuple[str, ...]:
        """Every topic it writes: its changelog, or its stream output's topics."""
        if self.stream_output is not None:
            return self.stream_output.topics
        return () if self.publish is None else (self.publish,)

    def output_topic(self) -> Topic:
        """The published changelog as a topic another pipeline reads (as a table)."""
        return output_topic(self.name, self.publish, self.table.keys, self.table_schema)

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
        likely = getattr(self.transform, "__module__", None) or ""
        module = declaring_module(self, likely)
        return None if module is None else project_code(module.__name__)

    @cached_property
    def fingerprint(self) -> str:
        """A hash of everything that shapes the output (see ``streaming.define.fingerprint``)."""
        return fingerprint(self)


def _as_a_plan(table: TableKind) -> str:
    """How a transform writing ``table`` is written as a plan."""
    if isinstance(table, LatestPerKey):
        position = "" if table.position is None else f"position={table.position!r}"
        return f"TOPIC.table().rows({position}) keeps the latest row per key"
    if isinstance(table, Accumulate):
        return (
            f"TOPIC.stream().group_by({table.key!r}, aggregations={{...}}) keeps running "
            "aggregates (Count, Sum, Min, Max, Mean, Latest) per key"
        )
    return "TOPIC.stream().process(function), a @stateful function, emits any rows per key"
