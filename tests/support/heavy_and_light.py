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
        takes_long = node is self.nodes[0]
        scope, work_unit = self.workqueue.popitem(last=not takes_long)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some(
            [collection.index(nodeid) for nodeid, done in work_unit.items() if not done]
        )
