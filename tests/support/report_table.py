"""Reading the plain-text tables of `kappa` reports back into cells, so tests can assert values.

The reader relies only on the layout a user sees (a header line, a rule of dashes, one line per
row, columns starting where their header starts, two blanks between columns), not on the code
that prints the tables.
"""

from __future__ import annotations

import re


def text_tables(text: str) -> list[list[dict[str, str]]]:
    """Every table in ``text``: a list of rows, each a mapping from header to cell text."""
    lines = text.splitlines()
    tables = []
    for i in range(1, len(lines)):
        if re.fullmatch(r"-+(  -+)*", lines[i]) and lines[i - 1].strip():
            tables.append(_rows(lines[i - 1], lines[i], lines[i + 1 :]))
    return tables


def _rows(header: str, rule: str, body: list[str]) -> list[dict[str, str]]:
    spans = [m.span() for m in re.finditer(r"-+", rule)]
    starts = [start for start, _ in spans]
    ends = [*starts[1:], None]
    names = [header[s:e].strip() for s, e in zip(starts, ends, strict=True)]
    rows = []
    for line in body:
        if not line.strip() or not _fits(line, starts):
            break  # a blank line or text that is not laid out in these columns ends the table
        rows.append({n: line[s:e].strip() for n, s, e in zip(names, starts, ends, strict=True)})
    return rows


def _fits(line: str, starts: list[int]) -> bool:
    """Whether the two characters before every column start are blank (or past the line end)."""
    return all(not line[start - 2 : start].strip() for start in starts[1:])


def table_with(text: str, header: str) -> list[dict[str, str]]:
    """The first table in ``text`` that has a column named ``header``.

    Raises:
        AssertionError: no such table (the report lost its table).
    """
    for rows in text_tables(text):
        if rows and header in rows[0]:
            return rows
    msg = f"no table with a {header!r} column in:\n{text}"
    raise AssertionError(msg)


def row_where(rows: list[dict[str, str]], column: str, value: str) -> dict[str, str]:
    """The one row whose ``column`` is ``value``."""
    found = [r for r in rows if r.get(column) == value]
    assert len(found) == 1, f"expected one row with {column}={value!r}, got {found} in {rows}"
    return found[0]
