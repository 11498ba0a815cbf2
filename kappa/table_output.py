"""Printing rows of the tables for people (aligned text) and programs (JSON lines, CSV):
``kappa table show``, ``kappa table get`` and ``kappa sql``."""

from __future__ import annotations

import csv
import json
import sys
from decimal import Decimal
from typing import Any, TextIO

import pyarrow as pa

from streaming.define.registry import get_pipeline
from streaming.delta.table_reader import read_arrow
from streaming.settings import Settings
from streaming.versions.live_pointer import resolve_deployment


def print_table(
    settings: Settings,
    name: str,
    version: str | None,
    fmt: str,
    limit: int | None = None,
    out: TextIO | None = None,
) -> None:
    out = out or sys.stdout
    deployment = resolve_deployment(settings, name, version)
    keys = get_pipeline(settings.pipelines, name).table.keys
    table = read_arrow(deployment.table_path).sort_by([(k, "ascending") for k in keys])
    if limit is not None:
        table = table.slice(0, limit)
    write_rows(table, fmt, out, f"({table.num_rows} rows, {deployment.id})")


FORMATS = ("table", "jsonl", "csv")


def write_rows(table: pa.Table, fmt: str, out: TextIO, footer: str = "") -> None:
    """``table``'s rows as aligned text (then ``footer``), JSON lines or CSV with a header."""
    rows = table.to_pylist()
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps({k: _plain(v) for k, v in row.items()}) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(table.schema.names)
        writer.writerows([_cell(row[n]) for n in table.schema.names] for row in rows)
    else:
        write_text_table(table.schema.names, rows, out)
        if footer:
            out.write(footer + "\n")


def write_text_table(names: list[str], rows: list[dict[str, Any]], out: TextIO) -> None:
    cells = [[_cell(row[n]) for n in names] for row in rows]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    out.write("  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)) + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for r in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + "\n")


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        as_float = float(value)
        return as_float if Decimal(repr(as_float)) == value else str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def _cell(value: Any) -> str:
    return "" if value is None else str(_plain(value))
