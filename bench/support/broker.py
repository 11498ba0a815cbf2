"""A broker shared by many tests: emptying it between them, and losing its log on purpose."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from streaming.wait import wait_until


def delete_topics(
    client: Mapping[str, str], topics: Iterable[str] | None = None, timeout_s: float = 30.0
) -> list[str]:
    """Delete ``topics`` (default: every topic but Kafka's internal ones) and wait until the
    broker no longer lists them; returns the names deleted.

    A test that deletes its input topics (and creates them again) sees what a deployment sees
    when the broker has lost its log: every partition starts again at offset 0.
    """
    admin = AdminClient(dict(client))
    listed = set(admin.list_topics(timeout=timeout_s).topics)
    wanted = listed if topics is None else set(topics) & listed
    doomed = sorted(t for t in wanted if not t.startswith("__"))
    if not doomed:
        return []
    for future in admin.delete_topics(doomed, operation_timeout=timeout_s).values():
        try:
            future.result()
        except KafkaException as exc:
            if "UNKNOWN_TOPIC" not in str(exc):
                raise
    gone = wait_until(
        lambda: not set(doomed) & set(admin.list_topics(timeout=timeout_s).topics),
        timeout_s=timeout_s,
        interval_s=0.05,
    )
    if not gone:
        msg = f"the broker still lists {doomed} {timeout_s:.0f} s after deleting them"
        raise TimeoutError(msg)
    return doomed
