"""The crash point refuses a request it cannot honour instead of never crashing."""

import pytest

from streaming.run.crash_point import crash_point
from streaming.settings import CRASH_AT_ENV


@pytest.mark.parametrize("spec", ["published", "published:x", "committed:3", ":3"])
def test_a_malformed_request_says_what_is_expected(monkeypatch, spec):
    monkeypatch.setenv(CRASH_AT_ENV, spec)
    with pytest.raises(ValueError, match="expected <point>:<batch>, point one of"):
        crash_point("published", 5)


def test_an_earlier_batch_passes(monkeypatch):
    monkeypatch.setenv(CRASH_AT_ENV, "published:5")
    crash_point("published", 4)  # still alive: the crash is asked from batch 5 on
