"""Which version of a pipeline publishes its table's changes, and when a handover is due.

Only the live version publishes; any version does while none is live (the first deployment to
run claims the pointer), so side-by-side versions never write into the same topic. A version's
published position records the switch of the live pointer it was published under
(:class:`Published`); the first batch a version publishes under a newer switch (it was promoted,
or rolled back to) starts with a handover, which brings the topic to the version's whole table.
The live version publishes a batch while holding the live pointer (:func:`publishing_turn`), so
a switch never lands inside a batch's publication, and a version that is no longer live sends
nothing after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from streaming.deployment import Deployment
from streaming.versions.live_pointer import Live, pointer_held, read_live


@dataclass(frozen=True)
class Published:
    """The last batch a deployment published, and the live pointer's switch it was under."""

    batch: int
    live_since: float | None

    def covers(self, batch_id: int, live_since: float | None) -> bool:
        """Whether batch ``batch_id`` went out under the switch ``live_since``."""
        return self.live_since == live_since and self.batch >= batch_id


@dataclass(frozen=True)
class Turn:
    """A version's turn to publish a batch: the switch of the live pointer it publishes under
    (None while no version is live)."""

    live_since: float | None

    def hands_over(self, last: Published | None) -> bool:
        """Whether the topic must first be handed over to this version: it never published
        (or the broker forgot its position), or it last published under another switch."""
        return last is None or last.live_since != self.live_since


@contextmanager
def publishing_turn(deployment: Deployment) -> Iterator[Turn | None]:
    """Hold the live pointer while ``deployment`` publishes a batch: its turn, or None when
    another version is live. Such a version publishes nothing and does not take the pointer, so
    a candidate replaying beside the live version and the live version do not wait for each
    other's batches; a switch to it during this batch is handed over by its next one."""
    # The pointer is replaced whole, so it is readable without holding it.
    if _another_is_live(deployment, read_live(deployment.home, deployment.pipeline)):
        yield None
        return
    with pointer_held(deployment.home, deployment.pipeline):
        live = read_live(deployment.home, deployment.pipeline)  # a switch may have come between
        if _another_is_live(deployment, live):
            yield None
        else:
            yield Turn(None if live is None else live.since)


def _another_is_live(deployment: Deployment, live: Live | None) -> bool:
    return live is not None and live.version != deployment.version
