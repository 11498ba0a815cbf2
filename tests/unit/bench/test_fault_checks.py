"""The fault harness's dead-letter bookkeeping: letters must match the poison in the log,
exactly once below the table's ends, and never a clean record."""

import json
from collections import Counter

from bench.faults_checks import Verdict, count_dead_letters
from bench.faults_workload import poison_kinds
from streaming.define.registry import get_pipeline
from streaming.define.topic import Topic
from streaming.settings import load_settings

KIND = poison_kinds("k00001")[0]


def _count(
    letters: list[tuple[int, int]], poison: list[tuple[int, int]], ends: dict[int, int]
) -> Verdict:
    v = Verdict()
    count_dead_letters(v, Counter(letters), dict.fromkeys(poison, KIND), ends)
    return v


def test_letters_for_exactly_the_covered_poison_pass() -> None:
    # the table covers offsets < 8 of partition 1: the poison at 9 need not be lettered yet,
    # and may already be (letters are written before the batch's table commit)
    for letters in ([(0, 3), (1, 5)], [(0, 3), (1, 5), (1, 9)]):
        v = _count(letters, [(0, 3), (1, 5), (1, 9)], {0: 10, 1: 8})
        assert (v.poison, v.dead_letters_missing, v.dead_letters_unexpected) == (2, 0, 0)
        assert v.ok


def test_a_letter_for_a_clean_record_fails() -> None:
    v = _count([(0, 3), (0, 4)], [(0, 3)], {0: 10})
    assert v.dead_letters_unexpected == 1
    assert "(0, 4)" in v.examples[0]
    assert not v.ok


def test_missing_and_duplicated_letters_fail() -> None:
    v = _count([(0, 3), (0, 3)], [(0, 3), (0, 6)], {0: 10})
    assert (v.dead_letters_missing, v.dead_letters_duplicated) == (1, 1)
    assert not v.ok


def test_poison_bytes_never_equal_a_valid_record() -> None:
    """Poison is found in the log by its bytes: each kind must really be invalid for the
    customers pipeline, or a clean record could be taken for poison."""
    customers = get_pipeline(load_settings(env={}).pipelines, "customers")
    assert customers.plan is not None
    (topic,) = customers.plan.inputs
    assert isinstance(topic, Topic)
    required = set(topic.required)
    for kind in poison_kinds("k00042"):
        key_ok = kind.key is not None and _utf8(kind.key)
        try:
            value = json.loads(kind.value)
        except ValueError:
            continue  # not JSON (or not UTF-8): never valid
        valid_shape = isinstance(value, dict) and required <= {
            k for k, v in value.items() if v is not None
        }
        typed = valid_shape and all(
            isinstance(value[f], str) for f in ("customer_id", "name", "email", "country")
        )
        typed = typed and type(value["updated_at"]) is int
        assert not (key_ok and typed), f"{kind.name} is a valid customer record"


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
