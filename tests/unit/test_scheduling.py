"""The suite's spread over xdist workers (tests/support/scheduling.py)."""

from __future__ import annotations

from streaming.settings import REPO_ROOT
from tests.support.scheduling import END_TO_END, rank, unit_of


def test_the_end_to_end_files_exist_and_form_one_unit_handed_out_first() -> None:
    assert all((REPO_ROOT / path).is_file() for path in END_TO_END)  # a rename would drop one
    assert len({unit_of(f"{path}::test_x") for path in END_TO_END}) == 1
    other = "tests/integration/test_cli.py"
    assert unit_of(f"{other}::test_a") == unit_of(f"{other}::test_b") == other
    ranks = [rank(f"{p}::t") for p in (*END_TO_END, other, "tests/unit/test_scheduling.py")]
    assert ranks == [0, 0, 0, 1, 2]
