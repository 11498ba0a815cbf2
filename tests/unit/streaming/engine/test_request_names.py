"""Names in an engine request's path become paths under the home: anything but a pipeline's or
a version's name is refused before the engine touches a file."""

from __future__ import annotations

import pytest

from streaming.engine.server import checked_names
from streaming.errors import KappaError


def test_names_pass_through() -> None:
    assert checked_names("customers", "v1", "v2") == ("customers", "v1", "v2")


@pytest.mark.parametrize(
    ("pipeline", "versions"),
    [("customers", ("..", "v2")), ("customers", ("v1", "a/b")), ("../etc", ("v1",))],
)
def test_a_path_in_a_name_is_refused(pipeline: str, versions: tuple[str, ...]) -> None:
    with pytest.raises(KappaError, match="invalid"):
        checked_names(pipeline, *versions)
