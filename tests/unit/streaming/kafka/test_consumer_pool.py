"""The consumer pool hands a consumer back out in its own process only, and never a failed one.

No broker is needed: a consumer connects in the background, and these reads never fetch.
"""

from __future__ import annotations

import os

import pytest

from streaming.kafka.consumer_pool import ConsumerPool

CLIENT = {"bootstrap.servers": "127.0.0.1:9"}  # nothing listens: nothing is fetched


def test_a_consumer_returned_is_leased_again_and_a_failed_one_is_not() -> None:
    pool = ConsumerPool()
    with pool.lease(CLIENT) as first:
        pass
    with pool.lease(CLIENT) as again:
        assert again is first
    with pool.lease(CLIENT, **{"socket.timeout.ms": "20000"}) as other:
        assert other is not first  # another configuration, another consumer
    with pytest.raises(RuntimeError), pool.lease(CLIENT):
        raise RuntimeError("the read failed")
    with pool.lease(CLIENT) as after:
        assert after is not first
    assert pool.created == 3
    pool.close()


def test_a_forked_child_starts_with_an_empty_pool() -> None:
    pool = ConsumerPool()
    with pool.lease(CLIENT) as parents:
        pass
    child = os.fork()
    if child == 0:  # librdkafka's threads are not in the child: its consumer must be new
        with pool.lease(CLIENT) as childs:
            fresh = childs is not parents
        os._exit(0 if fresh else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with pool.lease(CLIENT) as again:
        assert again is parents  # the parent's pool is untouched
    pool.close()
