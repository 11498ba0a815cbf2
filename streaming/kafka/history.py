"""History guards: a replay equals the live run only if the log still holds what the run read.

Two questions before a deployment starts:

- does the log still start at offset 0 (a replay from the earliest offsets would otherwise miss
  records retention already removed)?
- does every topic a stateful pipeline reads keep every record? A compacted topic keeps only the
  latest value per key, and a topic with a retention limit drops its oldest records, so a later
  replay of an as-of join or a window would see another log than the live run saw.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from streaming.errors import KafkaLogError
from streaming.kafka.log import CLIENT_LOGGER, KafkaLog, unavailable_error


class HistoryGoneError(KafkaLogError):
    """The log no longer starts at offset 0: a replay from the beginning would miss records."""


class HistoryNotKeptError(KafkaLogError):
    """A topic a stateful pipeline reads drops records (compaction or retention)."""


def check_log_has_beginning(client: Mapping[str, str], topics: tuple[str, ...]) -> None:
    """Refuse a replay from the earliest offsets when retention has removed the beginning.

    Raises:
        HistoryGoneError: naming each topic partition and how many records are gone.
    """
    with KafkaLog(client) as log:
        earliest = log.earliest(topics)
    gone = {f"{t}-{p}": o for t, parts in earliest.items() for p, o in parts.items() if o > 0}
    if gone:
        total = sum(gone.values())
        listing = ", ".join(f"{tp} (first offset {o})" for tp, o in sorted(gone.items()))
        msg = (
            f"the log no longer holds its beginning: {total} records are gone from {listing}; "
            "a rebuild from the earliest offsets would not equal the live table. Pass --force to "
            "replay anyway, or give explicit --starting-offsets"
        )
        raise HistoryGoneError(msg)


@dataclass(frozen=True)
class DroppingSetting:
    """A topic setting under which the broker drops records."""

    topic: str
    name: str
    value: str

    def describe(self) -> str:
        return f"{self.topic} has {self.name}={self.value}"


def dropping_settings(
    client: Mapping[str, str], topics: Iterable[str], timeout_s: float = 10.0
) -> list[DroppingSetting]:
    """The settings of ``topics`` under which the broker drops records: compaction, a time
    limit or a size limit on retention."""
    admin = AdminClient({**client, "logger": CLIENT_LOGGER})
    found: list[DroppingSetting] = []
    for topic in sorted(set(topics)):
        found += _dropping(topic, _topic_config(admin, client, topic, timeout_s))
    return found


def _topic_config(
    admin: AdminClient, client: Mapping[str, str], topic: str, timeout_s: float
) -> dict[str, str | None]:
    """The topic's effective settings. A topic created a moment ago may be unknown to the broker
    that answers until the new metadata reaches it, so that answer is asked again."""
    deadline = time.monotonic() + timeout_s
    while True:
        resource = ConfigResource(ResourceType.TOPIC, topic)
        try:
            [future] = admin.describe_configs([resource], request_timeout=timeout_s).values()
            return {name: entry.value for name, entry in future.result().items()}
        except KafkaException as exc:
            unknown = exc.args and exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
            if not unknown or time.monotonic() > deadline:
                raise unavailable_error(client, exc) from None
        time.sleep(0.1)


def _dropping(topic: str, config: Mapping[str, str | None]) -> list[DroppingSetting]:
    found = []
    policy = config.get("cleanup.policy") or "delete"
    if "compact" in policy.split(","):
        found.append(DroppingSetting(topic, "cleanup.policy", policy))
    if "delete" in policy.split(","):
        for name in ("retention.ms", "retention.bytes"):
            value = config.get(name)
            if value is not None and int(value) >= 0:
                found.append(DroppingSetting(topic, name, value))
    return found


def check_history_kept(client: Mapping[str, str], pipeline: str, topics: Iterable[str]) -> None:
    """Refuse to run a stateful pipeline over topics that drop records.

    Raises:
        HistoryNotKeptError: naming each topic and setting, and what to set instead.
    """
    dropping = dropping_settings(client, topics)
    if not dropping:
        return
    listing = "; ".join(d.describe() for d in dropping)
    msg = (
        f"pipeline {pipeline} reads its topics as of event time, so every record must stay in "
        f"the log (a replay of a compacted or expiring log would not equal the live run), but "
        f"{listing}. Set cleanup.policy=delete, retention.ms=-1 and retention.bytes=-1 on the "
        "topic (kafka-configs.sh --alter; for topics the platform creates, "
        "kafka.topic_config / kafka.topic_overrides in platform/kappa.yaml)"
    )
    raise HistoryNotKeptError(msg)
