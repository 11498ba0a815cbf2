"""What a pipeline is: its input topics, the shape of its events, its transform and its table.

A pipeline module declares one :class:`Pipeline` next to its code. The platform decodes raw Kafka
records (dead-lettering what does not parse), hands the good ones to ``transform`` once per
micro-batch, and merges the result into the compacted table as ``table`` says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from streaming.define.fingerprint import fingerprint
from streaming.define.names import validate_pipeline_name, validate_version
from streaming.define.table_kinds import TableKind
from streaming.define.value_schema import check_required, parse_value_schema
from streaming.errors import DefineError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Pipeline:
    """A streaming pipeline: topics in, one compacted table out.

    Attributes:
        name: the pipeline and table name (lower-case identifier).
        version: the version of the transform's logic; bump it when the output changes.
        topics: the Kafka topics it reads.
        value_schema: DDL of the JSON value's fields (``streaming.define.value_schema``); a
            record whose fields do not have exactly these types is dead-lettered.
        required: value fields that must be present and non-null, else the record is dead-lettered.
        accepts_tombstones: whether a null value is meaningful (a delete) or a bad record.
        transform: decoded records of one micro-batch -> rows for the table (see TableKind).
        table: how rows merge into the table.
        table_schema: the table's Arrow schema (its key first).
        settings: anything else that shapes the output; part of the fingerprint.
        quality: the table's quality spec (``quality.rules.TableSpec``), if declared.
        comparison: thresholds and expected changes for comparing a new version with the live
            one (``quality.rules.ComparisonPolicy``); the defaults when None.
        promotion: ``"auto"``: a candidate that caught up and passed every blocking comparison
            check becomes live by itself; ``"manual"``: it waits for a promote job or command.
    """

    name: str
    version: str
    topics: tuple[str, ...]
    value_schema: str
    required: tuple[str, ...]
    accepts_tombstones: bool
    transform: Callable[[DataFrame], DataFrame]
    table: TableKind
    table_schema: pa.Schema
    description: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    quality: Any = None
    comparison: Any = None
    promotion: Literal["manual", "auto"] = "manual"

    def __post_init__(self) -> None:
        validate_pipeline_name(self.name)
        validate_version(self.version)
        if not isinstance(self.table, TableKind):
            msg = f"pipeline {self.name}: table must be a table kind (LatestPerKey, Accumulate)"
            raise DefineError(msg)
        if self.table_schema.names[0] != self.table.key:
            msg = (
                f"pipeline {self.name}: the table schema must start with its key {self.table.key!r}"
            )
            raise DefineError(msg)
        try:  # the value schema and required fields, checked as the source will decode them
            check_required(parse_value_schema(self.value_schema), self.required)
        except ValueError as exc:
            raise DefineError(f"pipeline {self.name}: {exc}") from exc
        if self.promotion not in ("manual", "auto"):
            msg = f"pipeline {self.name}: promotion must be 'manual' or 'auto', not "
            msg += repr(self.promotion)
            raise DefineError(msg)

    @property
    def fingerprint(self) -> str:
        """A hash of everything that shapes the output (see ``streaming.define.fingerprint``)."""
        return fingerprint(self)
