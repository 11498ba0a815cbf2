"""Creating the topics the platform needs, with explicit settings.

The embedded broker's describe_configs reports only settings given at creation, so every topic is
created with its cleanup policy and retention spelled out (DESIGN.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from streaming.errors import KafkaLogError
from streaming.kafka.log import CLIENT_LOGGER, unavailable_error
from streaming.settings import Settings

TOPIC_CONFIGS: dict[str, dict[str, str]] = {
    "customers": {"cleanup.policy": "compact", "retention.ms": "-1"},
    "transactions": {"cleanup.policy": "delete", "retention.ms": "-1"},
}
DEFAULT_CONFIG = {"cleanup.policy": "delete", "retention.ms": "-1"}


class TopicCreationError(KafkaLogError):
    """The broker refused to create a topic."""


def ensure_topics(
    settings: Settings, topics: Mapping[str, Mapping[str, str]] | list[str], timeout_s: float = 10.0
) -> list[str]:
    """Create the topics that do not exist yet; returns the names it created."""
    wanted = (
        {t: TOPIC_CONFIGS.get(t, DEFAULT_CONFIG) for t in topics}
        if isinstance(topics, list)
        else dict(topics)
    )
    admin = AdminClient({**settings.kafka.client_config(), "logger": CLIENT_LOGGER})
    try:
        existing = set(admin.list_topics(timeout=timeout_s).topics)
    except KafkaException as exc:
        raise unavailable_error(settings.kafka.client_config(), exc) from None
    missing = [
        NewTopic(
            name,
            num_partitions=settings.kafka.topic_partitions,
            replication_factor=settings.kafka.topic_replication_factor,
            config=dict(config),
        )
        for name, config in wanted.items()
        if name not in existing
    ]
    if not missing:
        return []
    created = []
    for name, future in admin.create_topics(missing, request_timeout=timeout_s).items():
        try:
            future.result()
            created.append(name)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                msg = f"could not create topic {name!r}: {exc}"
                raise TopicCreationError(msg) from None
    return created
