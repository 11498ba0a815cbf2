"""The Kafka topics, the platform's only source of truth, as observable source assets."""

from dagster import (
    AssetKey,
    AssetSpec,
    DataVersion,
    ObserveResult,
    SourceAsset,
    observable_source_asset,
)

from assets.resources import KappaSettings
from streaming.dagster_names import topic_key_path
from streaming.kafka.log import KafkaLog


def topic_key(topic: str) -> AssetKey:
    return AssetKey(topic_key_path(topic))


def topic_asset(topic: str, config: dict[str, str]) -> SourceAsset:
    """The topic as an observable source asset; ``config``: its settings, shown as metadata."""

    @observable_source_asset(
        key=topic_key(topic),
        group_name="kafka",
        description=f"Kafka topic `{topic}` (the log every table is derived from).",
        metadata={"topic": topic, "config": config},
    )
    def _observe(kappa: KappaSettings) -> ObserveResult:
        settings = kappa.load()
        with KafkaLog.of(settings.kafka, timeout_s=5.0) as log:
            earliest, latest = log.bounds([topic])
        ends = latest.get(topic, {})
        meta = {f"end_offset.{p}": o for p, o in sorted(ends.items())}
        meta["records"] = sum(ends.values()) - sum(earliest.get(topic, {}).values())
        meta["partitions"] = len(ends)
        return ObserveResult(
            data_version=DataVersion(",".join(f"{p}:{o}" for p, o in sorted(ends.items()))),
            metadata=meta,
        )

    return _observe


def output_topic_asset(topic: str, table: AssetKey, stream: bool = False) -> AssetSpec:
    """A topic a pipeline writes, downstream of its table: the table's changelog, or (``stream``)
    the stream of its new rows."""
    what = "the stream of new rows" if stream else "the changelog"
    return AssetSpec(
        key=topic_key(topic),
        deps=[table],
        group_name="kafka",
        description=f"Kafka topic `{topic}`: {what} its table's live version publishes.",
        metadata={"topic": topic, "published_by": table.to_user_string()},
        kinds={"kafka"},
    )
