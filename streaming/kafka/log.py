"""Questions about the Kafka log: which partitions exist, where each begins and ends.

Every answer comes from the broker's own ListOffsets, batched into one request per broker. The
platform reads committed records only (``read_committed``), so a partition's end is its last
stable offset: a transaction still open holds it back, and a record below it never changes.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata, OffsetSpec

from streaming.errors import BrokerUnavailableError
from streaming.kafka.offsets import OffsetMap

# librdkafka's default fetch.queue.backoff.ms (1000 ms) stalls fetches whenever the local queue
# fills; 10 ms reads about twice as fast.
FAST_FETCH = {"fetch.queue.backoff.ms": "10"}
ISOLATION = "read_committed"

CLIENT_LOGGER = logging.getLogger("kappa.kafka")


def consumer_config(client: Mapping[str, str], **extra: str) -> dict[str, Any]:
    """A consumer configuration for reading exact ranges with ``assign()`` (no group commits).

    librdkafka's own log lines go to the ``kappa.kafka`` Python logger, not straight to stderr.
    """
    config: dict[str, Any] = {
        "logger": CLIENT_LOGGER,
        "group.id": f"kappa-reader-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        "enable.partition.eof": "true",
        "isolation.level": ISOLATION,
        "auto.offset.reset": "error",
        "socket.timeout.ms": "10000",
        **FAST_FETCH,
    }
    config.update(client)
    config.update(extra)
    return config


class KafkaLog:
    """Reads partition metadata and offset bounds. The client is created on first use."""

    def __init__(self, client: Mapping[str, str], timeout_s: float = 10.0) -> None:
        self._client = dict(client)
        self._timeout_s = timeout_s
        self._admin: AdminClient | None = None

    def close(self) -> None:
        self._admin = None

    def __enter__(self) -> KafkaLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(
                {**self._client, "logger": CLIENT_LOGGER, "socket.timeout.ms": "10000"}
            )
        return self._admin

    @classmethod
    def of(cls, kafka: Any, **options: float) -> KafkaLog:
        """A log reader for the configured cluster (``KafkaSettings``)."""
        return cls(kafka.client_config(), **options)

    def _metadata(self) -> ClusterMetadata:
        try:
            return self.admin.list_topics(timeout=self._timeout_s)
        except KafkaException as exc:
            raise unavailable_error(self._client, exc) from None

    def partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """Partition ids per topic; a topic that does not exist maps to an empty list."""
        metadata = self._metadata()
        found: dict[str, list[int]] = {}
        for topic in topics:
            meta = metadata.topics.get(topic)
            if meta is None or meta.error is not None:
                found[topic] = []
            else:
                found[topic] = sorted(meta.partitions)
        return found

    def earliest(self, topics: Iterable[str]) -> OffsetMap:
        """The first available offset of every partition."""
        return self._list(self.partitions(topics), OffsetSpec.earliest())

    def latest(self, topics: Iterable[str]) -> OffsetMap:
        """The end of every partition: the offset after its last committed record."""
        return self._list(self.partitions(topics), OffsetSpec.latest())

    def at_timestamp(self, topics: Iterable[str], timestamp_ms: int) -> OffsetMap:
        """Per partition, the first offset whose record timestamp is at or after
        ``timestamp_ms`` (-1 where no record is)."""
        return self._list(self.partitions(topics), OffsetSpec.for_timestamp(timestamp_ms))

    def bounds(self, topics: Iterable[str]) -> tuple[OffsetMap, OffsetMap]:
        """``(earliest, latest)`` of every partition, from one metadata request."""
        parts = self.partitions(topics)
        return self._list(parts, OffsetSpec.earliest()), self._list(parts, OffsetSpec.latest())

    def _list(self, parts: dict[str, list[int]], spec: OffsetSpec) -> OffsetMap:
        """ListOffsets for every partition of ``parts``. A partition whose leadership is moving
        (just created, or the broker just restarted) is asked again until the timeout."""
        offsets: OffsetMap = {topic: {} for topic in parts}
        wanted = {TopicPartition(t, p): spec for t, ps in parts.items() for p in ps}
        deadline = time.monotonic() + self._timeout_s
        while wanted:
            futures = self.admin.list_offsets(
                wanted,
                isolation_level=IsolationLevel.READ_COMMITTED,
                request_timeout=self._timeout_s,
            )
            for tp, future in futures.items():
                try:
                    offsets[tp.topic][tp.partition] = int(future.result().offset)
                    del wanted[tp]
                except KafkaException as exc:
                    if not _transient(exc) or time.monotonic() > deadline:
                        raise unavailable_error(self._client, exc) from None
            if wanted:
                time.sleep(0.1)
        return offsets


# What a broker answers for a partition whose leadership it is still settling: a topic created a
# moment ago, or a broker that just started. Kafka's own clients retry these.
_SETTLING = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.REQUEST_TIMED_OUT,
    }
)


def _transient(exc: KafkaException) -> bool:
    error = exc.args[0] if exc.args else None
    return isinstance(error, KafkaError) and (error.retriable() or error.code() in _SETTLING)


def topic_partitions_or_error(log: KafkaLog, topics: list[str]) -> dict[str, list[int]]:
    """Partitions per topic, failing with a clear message when a topic does not exist."""
    parts = log.partitions(topics)
    missing = [t for t, p in parts.items() if not p]
    if missing:
        msg = (
            f"topic(s) {missing} do not exist on the broker; create them "
            "(e.g. `kappa demo produce`) "
            "or fix the pipeline's topics"
        )
        raise BrokerUnavailableError(msg)
    return parts


def unavailable_error(client: Mapping[str, str], exc: KafkaException) -> BrokerUnavailableError:
    servers = client.get("bootstrap.servers", "?")
    msg = (
        f"Kafka at {servers} did not answer ({exc.args[0] if exc.args else exc}); start it with "
        "`kappa broker start` or set KAFKA_BOOTSTRAP_SERVERS"
    )
    return BrokerUnavailableError(msg)


__all__ = ["KafkaLog", "consumer_config", "topic_partitions_or_error"]
