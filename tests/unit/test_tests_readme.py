"""``tests/README.md`` matches the tree: it lists every test file, and every test path it names
exists (a test file renamed or removed leaves no stale line behind)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
README = TESTS / "README.md"
# A path into the tests (``unit/...``, ``integration/...``, ``tests/...``) or a bare test file.
NAMED = re.compile(r"(?<![\w/.])(?:tests/)?(?:(?:unit|integration|support)/[\w/]*|test_)\w*\.py\b")


def _test_files() -> set[str]:
    return {str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py")}


def named_paths(text: str) -> set[str]:
    return set(NAMED.findall(text))


def _exists(name: str) -> bool:
    if "/" not in name:
        return any(TESTS.rglob(name))
    return (TESTS / name.removeprefix("tests/")).is_file()


def test_every_test_file_is_listed() -> None:
    named = {n.removeprefix("tests/") for n in named_paths(README.read_text())}
    missing = sorted(_test_files() - named)
    assert missing == [], f"add a line to tests/README.md for each of: {missing}"


def test_every_test_path_named_exists() -> None:
    gone = sorted(n for n in named_paths(README.read_text()) if not _exists(n))
    assert gone == [], f"tests/README.md names files that do not exist: {gone}"


def test_the_check_reads_paths_as_the_readme_writes_them() -> None:
    text = "`unit/kappa/test_x.py::test_y`, `tests/support/reference.py` and `test_restart.py`"
    assert named_paths(text) == {
        "unit/kappa/test_x.py",
        "tests/support/reference.py",
        "test_restart.py",
    }
    assert not _exists("unit/kappa/test_no_such_file.py")
    assert _exists("unit/test_tests_readme.py")
