"""Which tables a SQL text reads: pipeline names, each the live version, or ``pipeline@version``.

A table is named by its pipeline (``customers``: the live version) or by a pipeline and a
version (``customers@v2``; a version with dots is written quoted, ``"customers@v1.2"``). The SQL
engine does not know ``@``, so such a name is rewritten as a quoted identifier, under which the
table is then registered. Names inside string literals and comments are not references, and
neither is a name after a dot (a column of another table).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

# Comments, string literals, quoted identifiers, then bare words (with an optional @version).
_TOKEN = re.compile(
    r"""
    (?P<skip>--[^\n]*|/\*.*?\*/|'(?:[^']|'')*')
    | "(?P<quoted>(?:[^"]|"")*)"
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*(?:@[A-Za-z0-9][A-Za-z0-9_-]*)?)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class TableRef:
    """A table as the SQL names it: a pipeline, and a version or None (the live one)."""

    pipeline: str
    version: str | None = None

    @property
    def sql_name(self) -> str:
        """The name the table is registered under in the engine."""
        return self.pipeline if self.version is None else f"{self.pipeline}@{self.version}"

    @classmethod
    def parse(cls, text: str) -> TableRef:
        pipeline, _, version = text.partition("@")
        return cls(pipeline, version or None)


def table_refs(sql: str, pipelines: Collection[str]) -> tuple[str, list[TableRef]]:
    """The SQL with every ``pipeline@version`` quoted, and the tables it reads, in order of
    first mention. Only names of ``pipelines`` count."""
    out: list[str] = []
    found: dict[TableRef, None] = {}
    last = 0
    for match in _TOKEN.finditer(sql):
        text = match.group("word") or match.group("quoted")
        if text is None or _after_dot(sql, match.start()):
            continue
        ref = TableRef.parse(text.replace('""', '"'))
        if ref.pipeline not in pipelines:
            continue
        found.setdefault(ref, None)
        if match.group("word") is not None and ref.version is not None:
            out.append(sql[last : match.start()])
            out.append(f'"{ref.sql_name}"')
            last = match.end()
    out.append(sql[last:])
    return "".join(out), list(found)


def _after_dot(sql: str, start: int) -> bool:
    before = sql[:start].rstrip()
    return before.endswith(".")
