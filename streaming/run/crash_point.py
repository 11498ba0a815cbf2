"""A crash at a known place, for fault tests.

A ``kill -9`` sent from outside lands wherever the driver happens to be. The window a test
needs most, between a batch's publication to its topic and the table's commit of that batch, is
a few milliseconds wide, so a test that aims at it from outside misses it on a busy machine.

``KAPPA_CRASH_AT=<point>:<batch>`` makes the driver SIGKILL its process group (the JVM and the
Python workers with it, when the driver leads its group) the first time batch ``<batch>`` or a
later one reaches ``<point>``: the same death as ``kill -9``, at a known place. Unset, nothing
happens. The points: ``published``: a batch that sent records to its published topic has
committed them there, with its position, and the table has not committed the batch yet;
``forward_copy``: a forward-only start's copy of the live version has done that step
(``streaming.run.forward_start``; the "batch" is the step, 1 to 5).
"""

from __future__ import annotations

import os
import signal

from streaming.settings import CRASH_AT_ENV, crash_request

POINTS = frozenset({"published", "forward_copy"})


def crash_point(point: str, batch_id: int) -> None:
    """Die here when the environment asks for a crash at ``point`` from some batch on."""
    spec = crash_request()
    if spec is None:
        return
    wanted, _, first = spec.partition(":")
    if wanted not in POINTS or not first.isdigit():
        msg = f"{CRASH_AT_ENV}={spec!r}: expected <point>:<batch>, point one of {sorted(POINTS)}"
        raise ValueError(msg)
    if wanted != point or batch_id < int(first):
        return
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
