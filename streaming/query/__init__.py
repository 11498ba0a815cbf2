"""Asking the tables: SQL over live tables, rows by key, and reads that agree across tables at
one cut of the log.

- ``sql``: :func:`run_sql` (``kappa sql``), the rows as Arrow with what was read;
- ``lookup``: :func:`lookup` (``kappa table get``) and :class:`KeyLookup` for a warm process;
- ``consistent``: choosing the cut of the log at which every table read has a commit;
- ``references``: which tables a SQL text names (``pipeline`` or ``pipeline@version``).
"""

from streaming.query.consistent import NoConsistentCutError
from streaming.query.lookup import KeyLookup, lookup, parse_keys
from streaming.query.sql import CutRead, QueryResult, TableRead, run_sql, sql_arrow

__all__ = [
    "CutRead",
    "KeyLookup",
    "NoConsistentCutError",
    "QueryResult",
    "TableRead",
    "lookup",
    "parse_keys",
    "run_sql",
    "sql_arrow",
]
