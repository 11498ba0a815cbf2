"""The fault harness's dead-letter bookkeeping: a letter must match poison the producer
confirmed, and a record read before its delivery report arrived is pending, not a failure."""

from collections import Counter

from bench.faults_checks import Verdict, count_dead_letters
from bench.faults_workload import Ledger, poison_kinds

KIND = poison_kinds("k00001")[0]


def _count(letters: list[tuple[int, int]], ledger: Ledger, ends: dict[int, int]) -> Verdict:
    v = Verdict()
    count_dead_letters(v, Counter(letters), ledger, ends)
    return v


def test_letters_for_exactly_the_covered_poison_pass() -> None:
    ledger = Ledger({(0, 3): KIND, (1, 5): KIND, (1, 9): KIND}, {0: 10, 1: 10})
    # the table covers offsets < 8 of partition 1: the poison at 9 is not due yet
    v = _count([(0, 3), (1, 5)], ledger, {0: 10, 1: 8})
    assert (v.poison, v.dead_letters, v.dead_letters_missing) == (2, 2, 0)
    assert (v.dead_letters_unexpected, v.dead_letters_pending) == (0, 0)
    assert v.ok


def test_a_letter_past_the_confirmed_end_is_pending_not_unexpected() -> None:
    ledger = Ledger({(0, 3): KIND}, {0: 10})
    v = _count([(0, 3), (0, 12)], ledger, {0: 13})
    assert (v.dead_letters_pending, v.dead_letters_unexpected) == (1, 0)
    assert v.ok


def test_a_letter_for_a_confirmed_clean_record_fails() -> None:
    ledger = Ledger({(0, 3): KIND}, {0: 10})
    v = _count([(0, 3), (0, 4)], ledger, {0: 10})
    assert v.dead_letters_unexpected == 1
    assert "(0, 4)" in v.examples[0]
    assert not v.ok


def test_missing_and_duplicated_letters_fail() -> None:
    ledger = Ledger({(0, 3): KIND, (0, 6): KIND}, {0: 10})
    v = _count([(0, 3), (0, 3)], ledger, {0: 10})
    assert (v.dead_letters_missing, v.dead_letters_duplicated) == (1, 1)
    assert not v.ok
