"""Whose turn it is to publish a pipeline's batch (``streaming.versions.publishing``): the live
version holds the live pointer through its batch, so a switch waits for the batch's end; a
version that is not live publishes nothing and holds nothing up, so a candidate replaying side
by side does not slow the live version's batches down."""

from __future__ import annotations

import threading

from streaming.deployment import Deployment
from streaming.home import Home
from streaming.versions.live_pointer import live_version, switch
from streaming.versions.publishing import publishing_turn


def _in_thread(action) -> threading.Event:  # type: ignore[no-untyped-def]
    done = threading.Event()

    def run() -> None:
        action()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done


def test_a_candidates_batch_holds_up_neither_the_live_version_nor_a_switch(tmp_path):  # type: ignore[no-untyped-def]
    home = Home(tmp_path)
    switch(home, "orders", "v1", "first deploy")
    live, candidate = (Deployment("orders", v, home) for v in ("v1", "v2"))

    def live_batch() -> None:
        with publishing_turn(live) as turn:
            assert turn is not None

    with publishing_turn(candidate) as turn:
        assert turn is None  # another version is live: it publishes nothing
        assert _in_thread(live_batch).wait(10)
        assert _in_thread(lambda: switch(home, "orders", "v2", "promote")).wait(10)
    assert live_version(home, "orders") == "v2"


def test_a_switch_waits_for_the_live_versions_batch_and_a_candidate_does_not(tmp_path):  # type: ignore[no-untyped-def]
    home = Home(tmp_path)
    switch(home, "orders", "v1", "first deploy")
    live = Deployment("orders", "v1", home)
    candidate = Deployment("orders", "v2", home)

    def candidate_batch() -> None:
        with publishing_turn(candidate) as turn:
            assert turn is None

    with publishing_turn(live) as turn:
        assert turn is not None
        assert _in_thread(candidate_batch).wait(10)  # the candidate does not wait for it
        switched = _in_thread(lambda: switch(home, "orders", "v2", "promote"))
        assert not switched.wait(0.5)  # held: the batch publishes under the switch it began with
        assert live_version(home, "orders") == "v1"
    assert switched.wait(10)
    assert live_version(home, "orders") == "v2"
