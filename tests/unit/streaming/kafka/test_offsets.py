from __future__ import annotations

import pytest

from streaming.errors import DataLossError, SourceOptionError
from streaming.kafka import offsets as off


def test_spark_json_round_trip():
    offsets = {"t": {1: 5, 0: 3}}
    assert off.dumps(offsets) == '{"t":{"0":3,"1":5}}'
    assert off.loads(off.dumps(offsets)) == {"t": {0: 3, 1: 5}}


def test_starting_offsets_forms():
    assert off.parse_starting_offsets("Earliest", ["t"]) == "earliest"
    assert off.parse_starting_offsets('{"t": {"0": 4, "1": -2}}', ["t"]) == {"t": {0: 4, 1: -2}}
    with pytest.raises(SourceOptionError, match="not subscribed"):
        off.parse_starting_offsets('{"u": {"0": 1}}', ["t"])
    with pytest.raises(SourceOptionError, match="earliest"):
        off.parse_starting_offsets("yesterday", ["t"])


def test_resolve_start_uses_earliest_latest_and_explicit_positions():
    earliest = {"t": {0: 0, 1: 10, 2: 0}}
    latest = {"t": {0: 50, 1: 60, 2: 70}}
    spec = {"t": {0: 7, 1: -1}}
    assert off.resolve_start(spec, earliest, latest) == {"t": {0: 7, 1: 60, 2: 0}}
    assert off.resolve_start("latest", earliest, latest) == latest
    assert off.resolve_start("earliest", earliest, latest) == earliest


def test_cap_splits_the_budget_by_backlog_and_never_overshoots():
    start = {"t": {0: 0, 1: 100, 2: 5}}
    latest = {"t": {0: 1000, 1: 200, 2: 5}}
    capped = off.cap_offsets(start, latest, 110)
    assert capped == {"t": {0: 100, 1: 110, 2: 5}}
    assert off.cap_offsets(start, latest, None) == latest
    assert off.cap_offsets(start, latest, 10_000) == latest
    # a tiny budget still moves every partition with a backlog
    tiny = off.cap_offsets(start, latest, 1)
    assert tiny["t"][0] == 1 and tiny["t"][1] == 101


def test_plan_ranges_are_half_open_and_skip_empty_partitions():
    ranges = off.plan_ranges({"t": {0: 3, 1: 9}}, {"t": {0: 8, 1: 9, 2: 4}})
    assert ranges == [off.PartitionRange("t", 0, 3, 8), off.PartitionRange("t", 2, 0, 4)]
    assert [r.count for r in ranges] == [5, 4]


@pytest.mark.parametrize(
    ("position", "earliest", "latest", "message"),
    [
        ({"t": {0: 10}}, {"t": {0: 0}}, {"t": {0: 5}}, "log ends at 5"),
        ({"t": {0: 1}}, {"t": {0: 4}}, {"t": {0: 9}}, "offsets 1..3 were removed"),
        ({"t": {3: 1}}, {"t": {0: 0}}, {"t": {0: 9}}, "partition t-3 vanished"),
        ({"gone": {0: 1}}, {}, {}, "no longer exists"),
    ],
)
def test_data_loss_is_detected(position, earliest, latest, message):
    with pytest.raises(DataLossError, match=message):
        off.check_no_data_loss(position, earliest, latest)


def test_no_data_loss_when_positions_are_inside_the_log():
    off.check_no_data_loss({"t": {0: 5}}, {"t": {0: 0}}, {"t": {0: 5}})


def test_new_partitions_start_at_their_beginning():
    assert off.add_new_partitions({"t": {0: 5}}, {"t": {0: 0, 1: 2}}) == {"t": {0: 5, 1: 2}}


def _ranges(*counts: int) -> list[off.PartitionRange]:
    return [off.PartitionRange("t", p, 100, 100 + n) for p, n in enumerate(counts)]


def test_pack_ranges_defaults_to_one_task_per_range():
    ranges = _ranges(5, 7, 9)
    assert off.pack_ranges(ranges, None) == [(r,) for r in ranges]


def test_pack_ranges_balances_the_groups_and_never_splits_a_range():
    ranges = _ranges(100, 1, 100, 1)
    groups = off.pack_ranges(ranges, max_groups=2)
    assert sorted(sum(r.count for r in g) for g in groups) == [101, 101]
    assert sorted((r for g in groups for r in g), key=lambda r: r.partition) == ranges
    for group in groups:  # topic/partition order inside a group
        assert list(group) == sorted(group, key=lambda r: r.partition)


def test_pack_ranges_puts_a_small_batch_in_one_task():
    ranges = _ranges(3_000, 2_000, 4_000, 1_000)
    assert off.pack_ranges(ranges, max_groups=2, min_records=25_000) == [tuple(ranges)]
    big = _ranges(30_000, 30_000, 30_000, 30_000)
    assert len(off.pack_ranges(big, max_groups=2, min_records=25_000)) == 2
    assert len(off.pack_ranges(big, max_groups=8, min_records=25_000)) == 4
    assert off.pack_ranges([], max_groups=2) == []


def test_co_partitioned_packing_keeps_a_partition_number_of_every_topic_in_one_task():
    ranges = [off.PartitionRange(t, p, 0, n) for t in ("a", "b") for p, n in enumerate((9, 1, 5))]
    for max_groups in (None, 1, 2, 3, 8):
        groups = off.pack_ranges(ranges, max_groups, copartition=True)
        numbers = [{r.partition for r in group} for group in groups]
        for group, held in zip(groups, numbers, strict=True):
            assert {(r.topic, r.partition) for r in group} == {(t, p) for t in "ab" for p in held}
        assert sorted(p for held in numbers for p in held) == [0, 1, 2]
    assert len(off.pack_ranges(ranges, 2, copartition=True)) == 2
