"""The history guard: a replay from the earliest offsets needs the log to still start at 0."""

from __future__ import annotations

from collections.abc import Mapping

from streaming.errors import KafkaLogError
from streaming.kafka.log import KafkaLog


class HistoryGoneError(KafkaLogError):
    """The log no longer starts at offset 0: a replay from the beginning would miss records."""


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
