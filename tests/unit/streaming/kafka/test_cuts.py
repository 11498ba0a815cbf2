"""Shared cut points: where batches end, and the cut log that deployments share."""

from __future__ import annotations

import os

from streaming.kafka.cuts import PRUNE_AFTER, Cut, CutLog, batch_end


def _cut(n: int, offsets: dict[int, int], topic: str = "t") -> Cut:
    return Cut(n, 1000 * n, {topic: offsets})


CUTS = [_cut(0, {0: 10, 1: 10}), _cut(1, {0: 40, 1: 30}), _cut(2, {0: 90, 1: 95})]


def test_a_batch_ends_at_the_newest_cut_in_its_range_within_its_limit():
    position, latest = {"t": {0: 10, 1: 10}}, {"t": {0: 100, 1: 100}}
    assert batch_end(position, latest, None, CUTS) == {"t": {0: 90, 1: 95}}
    assert batch_end(position, latest, 100, CUTS) == {"t": {0: 40, 1: 30}}  # 165 > 100
    assert batch_end(position, latest, 40, CUTS) is None  # no cut within 40 records
    assert batch_end({"t": {0: 0, 1: 0}}, latest, 15, CUTS) is None
    assert batch_end(position, {"t": {0: 100, 1: 90}}, None, CUTS) == {"t": {0: 40, 1: 30}}


def test_at_the_newest_cut_the_stream_waits_for_the_next_one():
    position = {"t": {0: 90, 1: 95}}
    assert batch_end(position, {"t": {0: 120, 1: 99}}, None, CUTS) == position
    # Under a fixed cap (the live version's commit, a run's target) no later cut falls in range.
    assert batch_end(position, {"t": {0: 120, 1: 99}}, None, CUTS, at_log_end=False) is None


def test_no_cut_ahead_of_the_position_leaves_the_batch_as_it_was():
    assert batch_end({"t": {0: 91, 1: 0}}, {"t": {0: 200, 1: 200}}, None, CUTS) is None


def test_a_cut_that_does_not_name_every_partition_of_the_source_is_not_used():
    cuts = [_cut(0, {0: 5}), Cut(1, 1, {"t": {0: 8, 1: 8}, "u": {0: 3}})]
    assert batch_end({"t": {0: 0, 1: 0}}, {"t": {0: 9, 1: 9}}, None, cuts) == {"t": {0: 8, 1: 8}}
    assert batch_end({"t": {0: 0, 1: 0}}, {"t": {0: 9, 1: 9}}, None, cuts[:1]) is None


class _Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


class _Ends:
    """The broker's last stable offsets, and which topics each listing asked for."""

    def __init__(self, ends: dict[str, dict[int, int]]) -> None:
        self.ends = ends
        self.asked: list[list[str]] = []

    def __call__(self, topics: list[str]) -> dict[str, dict[int, int]]:
        self.asked.append(topics)
        return {t: dict(self.ends.get(t, {})) for t in topics}


def test_a_cut_is_taken_when_the_newest_is_older_than_the_interval(tmp_path):
    log, clock, ends = CutLog(tmp_path / "cuts.jsonl"), _Clock(), _Ends({"t": {0: 5}})
    first = log.take(["t"], ends, min_age_ms=500, now_ms=clock)
    clock.ms += 400
    ends.ends["t"][0] = 9
    assert log.take(["t"], ends, min_age_ms=500, now_ms=clock) == first
    clock.ms += 200
    second = log.take(["t"], ends, min_age_ms=500, now_ms=clock)
    assert (first.id, first.offsets, second.id, second.offsets) == (
        0,
        {"t": {0: 5}},
        1,
        {"t": {0: 9}},
    )


def test_a_cut_names_every_topic_an_earlier_cut_named_and_a_new_topic_forces_one(tmp_path):
    path, clock = tmp_path / "cuts.jsonl", _Clock()
    ends = _Ends({"a": {0: 1}, "b": {0: 2, 1: 3}, "gone": {}})
    CutLog(path).take(["a", "gone"], ends, now_ms=clock)
    cut = CutLog(path).take(["b"], ends, min_age_ms=60_000, now_ms=clock)  # young, yet new
    assert cut is not None
    assert (cut.id, cut.offsets) == (1, {"a": {0: 1}, "b": {0: 2, 1: 3}})
    assert ends.asked[-1] == ["a", "b"]


def test_readers_see_appended_cuts_and_never_a_half_written_line(tmp_path):
    path, clock, ends = tmp_path / "cuts.jsonl", _Clock(), _Ends({"t": {0: 1}})
    reader, writer = CutLog(path), CutLog(path)
    writer.take(["t"], ends, now_ms=clock)
    assert [c.id for c in reader.cuts()] == [0]
    with open(path, "a") as handle:  # a writer that died mid-line
        handle.write('{"cut":1,"at_ms":')
    assert [c.id for c in reader.cuts()] == [0]
    ends.ends["t"][0] = 7
    writer.take(["t"], ends, now_ms=clock)
    assert [(c.id, c.offsets) for c in reader.cuts()] == [(0, {"t": {0: 1}}), (1, {"t": {0: 7}})]
    assert [c.id for c in CutLog(path).cuts()] == [0, 1]


def test_a_log_that_went_back_drops_the_cuts_that_point_past_it(tmp_path):
    path, clock = tmp_path / "cuts.jsonl", _Clock()
    log = CutLog(path)
    log.take(["t"], _Ends({"t": {0: 50}}), now_ms=clock)
    log.take(["t"], _Ends({"t": {0: 3}}), now_ms=clock)  # the topic was deleted and created
    assert [(c.id, c.offsets) for c in CutLog(path).cuts()] == [(1, {"t": {0: 3}})]


def test_cuts_older_than_the_retention_are_pruned(tmp_path):
    path, clock, ends = tmp_path / "cuts.jsonl", _Clock(), _Ends({"t": {0: 0}})
    log = CutLog(path, retention_ms=10_000)
    for i in range(2 * PRUNE_AFTER):
        ends.ends["t"][0] = i
        clock.ms += 100
        log.take(["t"], ends, now_ms=clock)
    kept = CutLog(path).cuts()
    expired = [c for c in kept if clock.ms - c.at_ms > 10_000]
    assert kept[0].id > 0 and len(expired) < PRUNE_AFTER
    assert kept[-1].offsets == {"t": {0: 2 * PRUNE_AFTER - 1}}
    inode = os.stat(path).st_ino
    log.take(["t"], ends, now_ms=clock)
    assert os.stat(path).st_ino == inode  # appended, not rewritten


def test_while_another_process_takes_a_cut_a_trigger_does_not_wait(tmp_path):
    path, clock, ends = tmp_path / "cuts.jsonl", _Clock(), _Ends({"t": {0: 1}})
    log = CutLog(path)
    with log._locked(wait=True):
        assert CutLog(path).take(["t"], ends, wait=False, now_ms=clock) is None
    assert ends.asked == []
