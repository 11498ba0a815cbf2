"""Which tables a SQL text reads: pipeline names, each the live version, or ``pipeline@version``.

A table is named by its pipeline (``customers``: the live version) or by a pipeline and a
version (``customers@v2``; a version with dots is written quoted, ``"customers@v1.2"``). The SQL
engine does not know ``@``, so such a name is rewritten as a quoted identifier, under which the
table is then registered.

The tables are the relations the parsed query reads (sqlglot): an alias, a column, a common table
expression or a name inside a string or comment is not one, even when it is spelled like a
pipeline. A text sqlglot cannot parse (a construct of the engine's dialect it does not know) is
still run: its tables are then every pipeline name it mentions outside strings and comments,
which may read a table more than it needs, never one less.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

# Comments, string literals, quoted identifiers, then bare words (with an optional @version).
_TOKEN = re.compile(
    r"""
    (?P<skip>--[^\n]*|/\*.*?\*/|'(?:[^']|'')*')
    | "(?P<quoted>(?:[^"]|"")*)"
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*(?:@[A-Za-z0-9][A-Za-z0-9_-]*)?)
    """,
    re.VERBOSE | re.DOTALL,
)
# DataFusion's SQL is PostgreSQL's dialect as far as naming relations goes.
_DIALECT = "postgres"


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
    """The SQL with every ``name@version`` quoted, and the tables of ``pipelines`` it reads, in
    order of first mention."""
    rewritten = _quote_versions(sql)
    try:
        names = list(_relations(rewritten))
    except SqlglotError:
        names = list(_mentions(rewritten))
    found: dict[TableRef, None] = {}
    for name in names:
        ref = TableRef.parse(name)
        if ref.pipeline in pipelines:
            found.setdefault(ref, None)
    return rewritten, list(found)


def _quote_versions(sql: str) -> str:
    out: list[str] = []
    last = 0
    for match in _TOKEN.finditer(sql):
        word = match.group("word")
        if word is not None and "@" in word and not _after_dot(sql, match.start()):
            out.append(sql[last : match.start()])
            out.append(f'"{word}"')
            last = match.end()
    out.append(sql[last:])
    return "".join(out)


def _relations(sql: str) -> Iterator[str]:
    """The unqualified relations the statements read, common table expressions excepted."""
    tables: list[exp.Table] = []
    for tree in sqlglot.parse(sql, read=_DIALECT):
        if tree is None:
            continue
        ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        tables += [
            t
            for t in tree.find_all(exp.Table)
            if not t.args.get("db") and t.name and t.name not in ctes
        ]
    for table in sorted(tables, key=lambda t: t.this.meta.get("start", 0)):
        yield table.name


def _mentions(sql: str) -> Iterator[str]:
    """Every name outside strings, comments and ``x.name``: the fallback for unparsed SQL."""
    for match in _TOKEN.finditer(sql):
        text = match.group("word") or match.group("quoted")
        if text is not None and not _after_dot(sql, match.start()):
            yield text.replace('""', '"')


def _after_dot(sql: str, start: int) -> bool:
    before = sql[:start].rstrip()
    return before.endswith(".")
