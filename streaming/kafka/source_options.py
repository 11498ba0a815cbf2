"""The options of the Kafka source (``streaming.kafka.source``), parsed and checked once.

Option names and defaults are those of Spark's built-in Kafka source where it has them; the kappa
extensions are described in the source's module docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streaming.define.value_schema import spark_ddl
from streaming.errors import SourceOptionError
from streaming.kafka import offsets as off
from streaming.kafka.cuts import DEFAULT_INTERVAL_MS, DEFAULT_RETENTION_MS
from streaming.kafka.value_decoder import ValueDecoder

BASE_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_SCHEMA = BASE_SCHEMA + ", headers array<struct<key: string, value: binary>>"
DECODED_COLUMNS = "_tombstone boolean, error string"


@dataclass(frozen=True)
class SourceOptions:
    """The validated options of one Kafka source."""

    topics: tuple[str, ...]
    client: dict[str, str]
    starting: str | off.OffsetMap
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    include_headers: bool
    ending: off.OffsetMap | None = None
    max_partitions: int | None = None
    min_partition_records: int = 0
    ending_file: str | None = None
    decoder: ValueDecoder | None = None
    cut_log: str | None = None
    cut_interval_ms: int = DEFAULT_INTERVAL_MS
    cut_retention_ms: int = DEFAULT_RETENTION_MS

    @classmethod
    def parse(cls, options: dict[str, str]) -> SourceOptions:
        lowered = {k.lower(): v for k, v in options.items()}
        topics = tuple(t.strip() for t in lowered.get("subscribe", "").split(",") if t.strip())
        if not topics:
            msg = "the Kafka source needs option 'subscribe' (comma-separated topics)"
            raise SourceOptionError(msg)
        client = {k[len("kafka.") :]: v for k, v in options.items() if k.startswith("kafka.")}
        if "bootstrap.servers" not in client:
            msg = "the Kafka source needs option 'kafka.bootstrap.servers'"
            raise SourceOptionError(msg)
        return cls(
            topics=topics,
            client=client,
            starting=off.parse_starting_offsets(
                lowered.get("startingoffsets", "latest"), list(topics)
            ),
            max_offsets_per_trigger=_positive_int(lowered, "maxOffsetsPerTrigger"),
            max_partitions=_positive_int(lowered, "maxPartitions"),
            min_partition_records=_positive_int(lowered, "minPartitionRecords") or 0,
            fail_on_data_loss=_flag(lowered, "failondataloss", True),
            include_headers=_flag(lowered, "includeheaders", False),
            ending=_ending(lowered.get("endingoffsets"), topics),
            ending_file=lowered.get("endingoffsetsfile") or None,
            decoder=_decoder(lowered),
            cut_log=lowered.get("cutlog") or None,
            cut_interval_ms=_positive_int(lowered, "cutIntervalMs") or DEFAULT_INTERVAL_MS,
            cut_retention_ms=_positive_int(lowered, "cutRetentionMs") or DEFAULT_RETENTION_MS,
        )

    def spark_schema(self) -> str:
        schema = HEADERS_SCHEMA if self.include_headers else BASE_SCHEMA
        if self.decoder is None:
            return schema
        return f"{schema}, _value {spark_ddl(self.decoder.fields)}, {DECODED_COLUMNS}"


def _decoder(lowered: dict[str, str]) -> ValueDecoder | None:
    """The value decoder the options ask for, if any (see "Decoding" in the module docstring)."""
    schema = lowered.get("valueschema")
    if schema is None:
        return None
    required = tuple(f.strip() for f in lowered.get("requiredfields", "").split(",") if f.strip())
    try:
        return ValueDecoder(schema, required, _flag(lowered, "acceptTombstones", True))
    except ValueError as exc:
        raise SourceOptionError(f"valueSchema/requiredFields: {exc}") from exc


def _ending(value: str | None, topics: tuple[str, ...]) -> off.OffsetMap | None:
    """``endingOffsets`` (a kappa extension for streams): never read past these offsets."""
    if value is None or value.strip().lower() == "latest":
        return None
    parsed = off.parse_starting_offsets(value, list(topics))
    if not isinstance(parsed, dict) or any(o < 0 for p in parsed.values() for o in p.values()):
        msg = f'endingOffsets={value!r} must be JSON offsets like {{"t": {{"0": 42}}}}'
        raise SourceOptionError(msg)
    return parsed


def _positive_int(lowered: dict[str, str], name: str) -> int | None:
    value = lowered.get(name.lower())
    if value is None or value == "":
        return None
    if not value.isdigit() or int(value) <= 0:
        msg = f"{name}={value!r} must be a positive integer"
        raise SourceOptionError(msg)
    return int(value)


def _flag(options: Any, name: str, default: bool) -> bool:
    lowered = {str(k).lower(): str(v) for k, v in dict(options).items()}
    value = lowered.get(name.lower())
    if value is None:
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    msg = f"option {name}={value!r} must be true or false"
    raise SourceOptionError(msg)
