"""Quality results' JSON files, and either kind of result as plain text.

``kappa quality report`` and ``kappa diff`` print :func:`render` (``quality.rendering``); a run
saves its result with :func:`save_result` so the CLI can print the latest one later with
:func:`load_result`.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from quality.comparison import ComparisonResult
from quality.errors import ResultFileError
from quality.formatting import jsonable
from quality.outcomes import TableValidation
from quality.rendering import render_comparison, render_validation

FORMAT_VERSION = 1
_KINDS: dict[str, type[TableValidation] | type[ComparisonResult]] = {
    "table_validation": TableValidation,
    "comparison": ComparisonResult,
}

Result = TableValidation | ComparisonResult


def render(result: Result) -> str:
    """Either kind of result as plain text."""
    if isinstance(result, ComparisonResult):
        return render_comparison(result)
    return render_validation(result)


def _kind(result: Result) -> str:
    return next(kind for kind, cls in _KINDS.items() if isinstance(result, cls))


def save_result(path: str | Path, result: Result) -> Path:
    """Write a result as JSON, atomically (readers never see half a file).

    Args:
        path: the file to write; parent directories are created.
        result: a :class:`TableValidation` or :class:`ComparisonResult`.

    Returns:
        The path written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = result.model_dump(mode="json")
    document = {"kind": _kind(result), "version": FORMAT_VERSION, "result": data}
    text = json.dumps(jsonable(document), indent=2, sort_keys=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_result(path: str | Path) -> Result:
    """Read a result written by :func:`save_result`.

    Raises:
        ResultFileError: the file is missing, not JSON, or not a quality result.
    """
    target = Path(path)
    try:
        document: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        msg = f"no quality result at {target}; run the validation or comparison first"
        raise ResultFileError(msg) from None
    except json.JSONDecodeError as exc:
        msg = f"{target} is not valid JSON ({exc}); delete it and run the check again"
        raise ResultFileError(msg) from None
    kind = document.get("kind") if isinstance(document, dict) else None
    if kind not in _KINDS or document.get("version") != FORMAT_VERSION:
        msg = f"{target} is not a quality result file (format version {FORMAT_VERSION})"
        raise ResultFileError(msg)
    try:
        return _KINDS[kind].model_validate(document["result"])
    except (KeyError, TypeError, ValidationError) as exc:
        msg = f"{target} holds an incomplete {kind} result ({exc}); run the check again"
        raise ResultFileError(msg) from None
