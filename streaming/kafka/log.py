"""Questions about the Kafka log: which partitions exist, where each begins and ends.

How a partition's end is measured depends on the broker (the ``broker_profile`` setting). On
Apache Kafka it is what ListOffsets(latest) answers. The embedded broker's ListOffsets answers the
base offset of the last record batch + 1, which would cut the tail off every planned range; there
a fetch at that offset (always at or below the true end) carries the true high watermark, so the
end is measured with that fetch (both methods agree on a Kafka-semantics broker). With the
profile ``auto`` the broker's cluster id decides on first contact (:data:`TANSU_CLUSTER_ID`).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import ClusterMetadata

from streaming.errors import BrokerUnavailableError
from streaming.kafka.offsets import OffsetMap

if TYPE_CHECKING:
    from streaming.settings import KafkaSettings

# librdkafka's default fetch.queue.backoff.ms (1000 ms) stalls fetches whenever the local queue
# fills; 10 ms reads ~2x faster. fetch.wait.max.ms: a range reader only fetches where
# records exist, yet the embedded broker holds a fetch that starts inside its last record batch
# for the whole wait (librdkafka's default: 500 ms, at the start of every caught-up range); with
# waits under ~25 ms it never answers such a fetch at all, so 100 ms keeps a margin.
FAST_FETCH = {
    "fetch.queue.backoff.ms": "10",
    "fetch.wait.max.ms": "100",
}
# The end probe only needs a response's high watermark, which even an empty answer carries.
PROBE_FETCH = {"fetch.wait.max.ms": "10"}
# A probe from a remembered end is answered as fast as the previous probe unless the log became
# shorter (then the embedded broker does not answer at all). Its budget is this floor or a
# multiple of the previous probe's time, whichever is larger: the durable engine's probes slow
# down as the log grows, and a budget below that would re-list the whole log every time.
KNOWN_END_PROBE_S = 2.0
KNOWN_END_PROBE_FACTOR = 3.0


CLIENT_LOGGER = logging.getLogger("kappa.kafka")

# The cluster id every tansu broker reports unless started with another --cluster-id.
TANSU_CLUSTER_ID = "tansu_cluster"


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
        "isolation.level": "read_uncommitted",
        "auto.offset.reset": "error",
        "socket.timeout.ms": "10000",
        **FAST_FETCH,
    }
    config.update(client)
    config.update(extra)
    return config


class KafkaLog:
    """Reads partition metadata and true offset bounds. Clients are created on first use."""

    def __init__(
        self,
        client: Mapping[str, str],
        timeout_s: float = 10.0,
        earliest_ttl_s: float = 0.0,
        ends_by_fetch: bool | None = True,
    ) -> None:
        """``earliest_ttl_s``: how long :meth:`bounds` may reuse the earliest offsets it listed
        (a source asks every trigger; they only move with retention). ``ends_by_fetch``: measure
        partition ends with a fetch (the embedded broker) instead of ListOffsets (Kafka); None:
        with a fetch if the broker reports tansu's cluster id."""
        self._client = dict(client)
        self._timeout_s = timeout_s
        self._ends_by_fetch = ends_by_fetch
        self._earliest_ttl_s = earliest_ttl_s
        self._consumer: Consumer | None = None
        # The last true end seen per partition: a valid place to probe from next time, which
        # spares a ListOffsets request per partition (slow on the embedded broker).
        self._known_ends: dict[tuple[str, int], int] = {}
        self._earliest: tuple[float, OffsetMap] | None = None
        # When the last probe ended and how long it took.
        self._probed_at: float | None = None
        self._probe_s = 0.0

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def __enter__(self) -> KafkaLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(consumer_config(self._client, **PROBE_FETCH))
        return self._consumer

    def _fetches_ends(self) -> bool:
        """Whether ends are measured with a fetch; under ``auto``, asked of the broker once."""
        if self._ends_by_fetch is None:
            self._ends_by_fetch = self._metadata().cluster_id == TANSU_CLUSTER_ID
        return self._ends_by_fetch

    def _metadata(self) -> ClusterMetadata:
        try:
            return self.consumer.list_topics(timeout=self._timeout_s)
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
        """The first available offset of every partition (ListOffsets earliest)."""
        return self._list(topics)[0]

    @classmethod
    def of(cls, kafka: KafkaSettings, **options: float) -> KafkaLog:
        """A log reader for the configured cluster, measuring ends as its broker profile says."""
        return cls(kafka.client_config(), ends_by_fetch=kafka.ends_by_fetch, **options)

    def latest(self, topics: Iterable[str]) -> OffsetMap:
        """The true log end offset of every partition (see the module docstring)."""
        if not self._fetches_ends():
            return self._list(topics)[1]
        self._fresh_consumer()
        return self._probe_ends(self._list(topics)[1])

    def recent_ends(self, topics: Iterable[str], max_age_s: float) -> OffsetMap:
        """The ends this reader measured within ``max_age_s``, else :meth:`bounds`' ends.

        For observers (health reports) that may be a few seconds behind but must not make the
        log list itself again on each call.
        """
        topics = list(topics)
        recent = self._probed_at is not None and time.monotonic() - self._probed_at < max_age_s
        if recent:
            known: OffsetMap = {t: {} for t in topics}
            for (topic, partition), end in self._known_ends.items():
                if topic in known:
                    known[topic][partition] = end
            if all(known.values()):
                return known
        return self.bounds(topics)[1]

    def bounds(self, topics: Iterable[str]) -> tuple[OffsetMap, OffsetMap]:
        """``(earliest, latest)``: one metadata request, a fetch per partition, and a listing per
        partition only where no end is known yet or the earliest offsets are older than the
        TTL. If the log is shorter than a remembered end (the broker lost it), it is listed
        afresh, so the loss shows in the answer."""
        topics = list(topics)
        if not self._fetches_ends():
            return self._list(topics)
        parts = self.partitions(topics)
        cached = self._earliest
        fresh = cached is not None and time.monotonic() - cached[0] < self._earliest_ttl_s
        known = all((t, p) in self._known_ends for t, ps in parts.items() for p in ps)
        if not (fresh and known and _same_partitions(cached[1], parts)):
            self._fresh_consumer()
            earliest, listed = self._list(topics)
            self._earliest = (time.monotonic(), earliest)
            return earliest, self._probe_ends(listed)
        starts = {t: {p: self._known_ends[(t, p)] for p in ps} for t, ps in parts.items()}
        try:
            budget = max(KNOWN_END_PROBE_S, KNOWN_END_PROBE_FACTOR * self._probe_s)
            return cached[1], self._probe_ends(starts, min(budget, self._timeout_s))
        except (_BeyondEnd, BrokerUnavailableError):
            # Past the end of a log that shrank: Kafka answers out of range, the embedded broker
            # does not answer at all. Either way, list afresh (a broker that is down fails there).
            self._known_ends.clear()
            self._earliest = None
            self._probed_at = None
            return self.bounds(topics)

    def _fresh_consumer(self) -> None:
        """Start the next probe from a new consumer. A probe from a listed end starts inside
        the last record batch, where the embedded broker may send no answer for a while; only a
        watermark this probe fetched may end it, and a new consumer has no older one cached."""
        self.close()

    def _list(self, topics: Iterable[str]) -> tuple[OffsetMap, OffsetMap]:
        """The listed (ListOffsets) earliest and latest offsets of every partition."""
        low: OffsetMap = {}
        high: OffsetMap = {}
        for topic, parts in self.partitions(topics).items():
            low[topic], high[topic] = {}, {}
            for partition in parts:
                low[topic][partition], high[topic][partition] = self._listed(topic, partition)
        return low, high

    def _listed(self, topic: str, partition: int) -> tuple[int, int]:
        try:
            low, high = self.consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=self._timeout_s
            )
        except KafkaException as exc:
            raise unavailable_error(self._client, exc) from None
        return int(low), int(high)

    def _probe_ends(self, listed: OffsetMap, timeout_s: float | None = None) -> OffsetMap:
        """Fetch once at each listed end and read the high watermark the fetch carried (from a
        record, the end-of-partition event, or an empty response above the listed end)."""
        timeout_s = self._timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        tps = [TopicPartition(t, p, o) for t, parts in listed.items() for p, o in parts.items()]
        if not tps:
            return {t: {} for t in listed}
        consumer = self.consumer
        consumer.assign(tps)
        # librdkafka keeps a partition's cached high watermark across unassign/assign: right
        # after assign it is whatever the previous probe's last (in-flight) fetch carried. Only
        # a value above it can have come from a fetch of this probe.
        before = {
            (tp.topic, tp.partition): int(consumer.get_watermark_offsets(tp, cached=True)[1])
            for tp in tps
        }
        ends: OffsetMap = {t: {} for t in listed}
        pending = {(tp.topic, tp.partition) for tp in tps}
        deadline = time.monotonic() + timeout_s
        try:
            while pending and time.monotonic() < deadline:
                # Ask for no more than one event per unresolved partition: consume() waits for
                # the full count or the timeout, and every answer (a record or the end of the
                # partition) resolves one.
                for msg in consumer.consume(num_messages=len(pending), timeout=0.02):
                    key = (msg.topic(), msg.partition())
                    if key not in pending:
                        continue
                    err = msg.error()
                    if err is not None and err.code() == KafkaError._PARTITION_EOF:
                        ends[key[0]][key[1]] = int(msg.offset())
                        pending.discard(key)
                    elif err is not None and err.code() in _OUT_OF_RANGE:
                        raise _BeyondEnd(key)
                    elif err is None:
                        cached = consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
                        ends[key[0]][key[1]] = int(cached[1])
                        pending.discard(key)
                        consumer.pause([TopicPartition(*key)])
                    elif err.fatal() or not err.retriable():
                        raise unavailable_error(self._client, KafkaException(err))
                # A fetch at an offset inside the last record batch can come back empty from the
                # embedded broker, yet its response still carries the high watermark. (A cached
                # value left from before this probe that is above the listed end means records
                # exist there: the record path answers with a fresh watermark.)
                for topic, partition in list(pending):
                    tp = TopicPartition(topic, partition)
                    high = int(consumer.get_watermark_offsets(tp, cached=True)[1])
                    if high > max(listed[topic][partition], before[(topic, partition)]):
                        ends[topic][partition] = high
                        pending.discard((topic, partition))
                        consumer.pause([tp])
        finally:
            consumer.resume(tps)
            consumer.unassign()
        if pending:
            missing = ", ".join(f"{t}-{p}" for t, p in sorted(pending))
            msg = f"no fetch response for {missing} within {timeout_s:.0f} s"
            raise BrokerUnavailableError(msg)
        self._known_ends.update(
            {(t, p): end for t, parts in ends.items() for p, end in parts.items()}
        )
        self._probed_at = time.monotonic()
        self._probe_s = self._probed_at - started
        return ends


class _BeyondEnd(Exception):
    """A probe started past the end of the log: a remembered end the broker no longer has."""


_OUT_OF_RANGE = (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET)


def _same_partitions(offsets: OffsetMap, parts: dict[str, list[int]]) -> bool:
    return {t: sorted(p) for t, p in offsets.items()} == {t: sorted(p) for t, p in parts.items()}


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


__all__ = ["OFFSET_END", "KafkaLog", "consumer_config", "topic_partitions_or_error"]
