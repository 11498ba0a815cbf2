"""Reading printed tables back into cells (what report-checking tests rely on)."""

from __future__ import annotations

import pytest

from tests.support.report_table import row_where, table_with, text_tables

REPORT = """Table customers: FAILED (1 of 3 checks failed)
rows 12   validated at 2026-01-01   now_ms 1

check            result  unexpected  examples
---------------  ------  ----------  --------------
in_set(country)  FAIL             1  zz-bad
not_null(email)  ok                  
row_count        ok          123456  two words, xy
Data Docs page:  file:///tmp/docs/index.html

keys      count  examples
--------  -----  --------
only old      2  a, b
"""


def test_cells_are_read_by_the_columns_their_headers_start():
    checks = table_with(REPORT, "check")
    assert [r["check"] for r in checks] == ["in_set(country)", "not_null(email)", "row_count"]
    assert row_where(checks, "check", "in_set(country)") == {
        "check": "in_set(country)",
        "result": "FAIL",
        "unexpected": "1",
        "examples": "zz-bad",
    }
    assert row_where(checks, "check", "not_null(email)")["unexpected"] == ""
    assert row_where(checks, "check", "row_count")["examples"] == "two words, xy"
    assert len(text_tables(REPORT)) == 2
    assert row_where(table_with(REPORT, "keys"), "keys", "only old")["count"] == "2"


def test_a_missing_table_or_row_is_an_assertion_with_the_text():
    with pytest.raises(AssertionError, match="no table with a 'nope' column"):
        table_with(REPORT, "nope")
    with pytest.raises(AssertionError, match="expected one row"):
        row_where(table_with(REPORT, "check"), "check", "absent")
