"""How ``make test`` hands test files to its two xdist workers: one takes the long files, longest
first, the other the short ones, shortest first, and they meet in the middle.

A whole-platform scenario (a Dagster platform, an engine with a dozen deployments) wants both
cores: two at once each take about twice as long, and one beside short files about its own time.
xdist's own order (by test count) ran every one-test scenario last, where they met; starting the
longest first ran them side by side at the start. Kept apart, each runs beside short files.

The order comes from the collection (``tests/conftest.py`` sorts files longest first, by their
``slow(seconds=N)`` marker); with more than two workers the others take short files too.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadFileScheduling


class HeavyAndLight(LoadFileScheduling):
    """``--dist loadfile``, with the first worker taking files from the front of the queue (the
    longest) and every other worker from its back."""

    def _assign_work_unit(self, node: Any) -> None:
        if node is not self.nodes[0] and self.workqueue:
            # xdist hands out the queue's first unit: put the last one first for this worker.
            self.workqueue.move_to_end(next(reversed(self.workqueue)), last=False)
        super()._assign_work_unit(node)
