"""Choosing the cut of the log a consistent read uses: the newest at which every table has a
commit, never a mix, and a refusal naming the table that holds the read back."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import CommitProperties, write_deltalake

from streaming.delta.commit_info import commit_info
from streaming.delta.table_reader import open_table
from streaming.deployment import Deployment
from streaming.home import Home
from streaming.kafka import offsets as off
from streaming.kafka.cuts import Cut
from streaming.query.consistent import NoConsistentCutError, Source, choose_cut

CUTS = [
    Cut(0, 100_000, {"x": {0: 10}, "y": {0: 5}}),
    Cut(1, 101_000, {"x": {0: 20}, "y": {0: 7}}),
    Cut(2, 102_000, {"x": {0: 30}, "y": {0: 9}}),
]


def _table(home: Home, name: str, commits: list[dict[str, dict[int, int]]]) -> Source:
    """A table whose batch commits record ``commits`` (input offsets), one row per commit."""
    deployment = Deployment(name, "v1", home)
    for batch, offsets in enumerate(commits):
        info = commit_info(batch, off.to_spark(offsets), deployment.id, "f")
        write_deltalake(
            str(deployment.table_path),
            pa.table({"batch": [batch]}),
            mode="append",
            commit_properties=CommitProperties(custom_metadata=info),
        )
    return Source(deployment, open_table(deployment.table_path))


def test_the_newest_cut_every_table_committed_at_is_chosen(tmp_path):
    home = Home(tmp_path)
    sources = {
        "a": _table(home, "a", [{"x": {0: 10}}, {"x": {0: 20}}, {"x": {0: 30}}]),
        # b's last batch ended off the cuts (a replay's read limit), so cut 2 is not common
        "b": _table(
            home,
            "b",
            [{"x": {0: 10}, "y": {0: 5}}, {"x": {0: 20}, "y": {0: 7}}, {"x": {0: 25}, "y": {0: 8}}],
        ),
    }
    choice = choose_cut(sources, CUTS, max_lag_s=30, now_s=102.5)
    assert choice.cut.id == 1
    assert {n: c.end_offsets for n, c in choice.commits.items()} == {
        "a": {"x": {0: 20}},
        "b": {"x": {0: 20}, "y": {0: 7}},
    }
    assert {n: c.table_version for n, c in choice.commits.items()} == {"a": 1, "b": 1}


def test_a_table_whose_topics_did_not_move_matches_every_later_cut(tmp_path):
    home = Home(tmp_path)
    sources = {
        "a": _table(home, "a", [{"x": {0: 30}}]),
        "c": _table(home, "c", [{"y": {0: 9}}]),
    }
    later = [*CUTS, Cut(3, 103_000, {"x": {0: 30}, "y": {0: 9}, "z": {0: 4}})]
    choice = choose_cut(sources, later, max_lag_s=30, now_s=200.0)
    assert choice.cut.id == 3  # the newest cut, however old: nothing moved since


def test_a_table_left_behind_refuses_the_read_once_the_cut_is_too_old(tmp_path):
    home = Home(tmp_path)
    sources = {
        "a": _table(home, "a", [{"x": {0: 10}}, {"x": {0: 20}}, {"x": {0: 30}}]),
        "b": _table(home, "b", [{"x": {0: 10}, "y": {0: 5}}, {"x": {0: 20}, "y": {0: 7}}]),
    }
    assert choose_cut(sources, CUTS, max_lag_s=30, now_s=102.5).cut.id == 1
    with pytest.raises(NoConsistentCutError) as refused:
        choose_cut(sources, CUTS, max_lag_s=30, now_s=160.0)
    message = str(refused.value)
    assert "newest cut every table has a commit at is #1, taken 59.0 s ago" in message
    assert "b__v1 is 12 records behind cut #2, not running (kappa deploy b)" in message
    assert "a__v1" not in message
    assert "--latest" in message


def test_no_common_cut_no_cut_at_all_and_no_commit_are_refused(tmp_path):
    home = Home(tmp_path)
    a = _table(home, "a", [{"x": {0: 15}}])
    b = _table(home, "b", [{"x": {0: 20}, "y": {0: 7}}])
    with pytest.raises(NoConsistentCutError, match=r"no kept cut of the log \(#0-#2\)"):
        choose_cut({"a": a, "b": b}, CUTS, max_lag_s=30, now_s=102.5)
    with pytest.raises(NoConsistentCutError, match="no cut of the log is kept yet"):
        choose_cut({"b": b}, [], max_lag_s=30, now_s=102.5)
    empty = Deployment("e", "v1", home)
    write_deltalake(str(empty.table_path), pa.table({"batch": pa.array([], pa.int64())}))
    source = Source(empty, open_table(empty.table_path))
    with pytest.raises(NoConsistentCutError, match="e__v1 has committed no batch yet"):
        choose_cut({"b": b, "e": source}, CUTS, max_lag_s=30, now_s=102.5)
