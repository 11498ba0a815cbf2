"""How the suite is spread over pytest-xdist workers (``make test``: ``--dist loadfile``).

Each test file is one unit of work, so a file's tests share its fixtures on one worker, except
the end-to-end files that each run a whole platform: they form one unit, handed out first, so
one worker runs them one after another while the others take the rest. Run against each other,
they doubled each other's time. The unit tests come last: short units that even out the
workers' ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdist.scheduler import LoadFileScheduling

if TYPE_CHECKING:
    import pytest

END_TO_END_UNIT = "end-to-end"
END_TO_END = frozenset(
    {
        "tests/integration/test_whole_demo.py",
        "tests/integration/test_browser_reprocessing.py",
        "tests/integration/test_restart.py",
    }
)


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the one end-to-end unit."""
    path = file_of(nodeid)
    return END_TO_END_UNIT if path in END_TO_END else path


def rank(nodeid: str) -> int:
    """0 for the end-to-end files, 1 for the other integration tests, 2 for the unit tests."""
    path = file_of(nodeid)
    return 0 if path in END_TO_END else 1 if path.startswith("tests/integration/") else 2


class FilesWithOneEndToEndUnit(LoadFileScheduling):
    """xdist's per-file units, with the end-to-end files as one unit. The queue keeps the
    collection's order (``--no-loadscope-reorder``), which ``rank`` set."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)


def in_order(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: rank(item.nodeid))
