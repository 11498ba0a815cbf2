"""Creating the topics the platform needs, each with its settings spelled out (the embedded
broker's describe_configs reports only the settings given at creation)."""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from streaming.errors import KafkaLogError
from streaming.kafka.log import CLIENT_LOGGER, unavailable_error
from streaming.settings import Settings


class TopicCreationError(KafkaLogError):
    """The broker refused to create a topic."""


def ensure_topics(
    settings: Settings, topics: Mapping[str, Mapping[str, str]] | list[str], timeout_s: float = 10.0
) -> list[str]:
    """Create the topics that do not exist yet; returns the names it created.

    ``topics``: names (created with ``settings.kafka.config_of_topic``) or names with settings.
    """
    wanted = (
        {t: settings.kafka.config_of_topic(t) for t in topics}
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
