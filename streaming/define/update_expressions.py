"""``Accumulate``'s update expressions evaluated on Arrow columns, wherever a batch is written.

An update is SQL over the stored row ``t`` and the batch row ``s`` (``"t.n + s.n"``,
``"greatest(t.last, s.last)"``), as a Delta merge takes it. To fold a batch into the stored rows
on the executors, without a SQL engine there, the column arithmetic such updates are made of is
evaluated here with pyarrow compute: ``t.col`` and ``s.col``, number, string, ``true``,
``false`` and ``null`` literals, ``+ - * /``, unary minus, ``||`` (string concatenation) and the
functions ``greatest``, ``least``, ``coalesce``, ``abs`` and ``concat``. Null semantics are SQL's:
arithmetic with a null is null, ``greatest``/``least`` skip nulls. Anything else is not
:func:`parse`-able, and such a kind is written by a Delta merge instead (it says so).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

Columns = Mapping[str, pa.Array]

_BINARY: dict[type, Callable[[pa.Array, pa.Array], pa.Array]] = {
    ast.Add: pc.add_checked,
    ast.Sub: pc.subtract_checked,
    ast.Mult: pc.multiply_checked,
    ast.Div: pc.divide_checked,
    ast.BitOr: lambda a, b: pc.binary_join_element_wise(a, b, ""),  # SQL's ||
}
_FUNCTIONS: dict[str, Callable[..., pa.Array]] = {
    "greatest": lambda *a: pc.max_element_wise(*a, skip_nulls=True),
    "least": lambda *a: pc.min_element_wise(*a, skip_nulls=True),
    "coalesce": pc.coalesce,
    "abs": pc.abs_checked,
    "concat": lambda *a: pc.binary_join_element_wise(*a, ""),
}
_NAMES = {"true": True, "false": False, "null": None}
# A quoted SQL string, or the concatenation operator outside one.
_TOKENS = re.compile(r"'(?:[^']|'')*'|\|\|")


class UnsupportedUpdate(ValueError):
    """An update expression beyond what :func:`parse` evaluates."""


@dataclass(frozen=True)
class Update:
    """One parsed update expression."""

    sql: str
    tree: ast.expr

    def evaluate(self, stored: Columns, batch: Columns, length: int) -> pa.Array:
        """The expression on ``length`` rows: ``t.x`` from ``stored``, ``s.x`` from ``batch``."""
        return _evaluate(self.tree, {"t": stored, "s": batch}, length)


def parse(sql: str) -> Update:
    """Parse one update expression.

    Raises:
        UnsupportedUpdate: it uses SQL beyond the subset in the module docstring.
    """
    python = _TOKENS.sub(lambda m: "|" if m.group(0) == "||" else _python_string(m.group(0)), sql)
    try:
        tree = ast.parse(python.strip(), mode="eval").body
    except SyntaxError:
        raise UnsupportedUpdate(f"{sql!r} is not column arithmetic") from None
    _check(tree, sql)
    return Update(sql, tree)


def _python_string(quoted: str) -> str:
    return repr(quoted[1:-1].replace("''", "'"))


def _check(node: ast.expr, sql: str) -> None:
    if isinstance(node, ast.Attribute):
        if not (isinstance(node.value, ast.Name) and node.value.id in ("t", "s")):
            raise UnsupportedUpdate(f"{sql!r}: columns are t.<column> or s.<column>")
    elif isinstance(node, ast.Constant):
        if not isinstance(node.value, (int, float, str)) or isinstance(node.value, bool):
            raise UnsupportedUpdate(f"{sql!r}: unsupported literal {node.value!r}")
    elif isinstance(node, ast.Name):
        if node.id.lower() not in _NAMES:
            raise UnsupportedUpdate(f"{sql!r}: unknown name {node.id!r}")
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise UnsupportedUpdate(f"{sql!r}: unsupported operator")
        _check(node.left, sql)
        _check(node.right, sql)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        _check(node.operand, sql)
    elif isinstance(node, ast.Call):
        name = node.func.id.lower() if isinstance(node.func, ast.Name) else ""
        if name not in _FUNCTIONS or node.keywords or not node.args:
            raise UnsupportedUpdate(f"{sql!r}: unsupported function")
        for arg in node.args:
            _check(arg, sql)
    else:
        raise UnsupportedUpdate(f"{sql!r}: unsupported SQL ({type(node).__name__})")


def _evaluate(node: ast.expr, rows: Mapping[str, Columns], length: int) -> pa.Array:
    if isinstance(node, ast.Attribute):
        assert isinstance(node.value, ast.Name)
        columns = rows[node.value.id]
        if node.attr not in columns:
            msg = f"{node.value.id}.{node.attr}: no such column"
            raise UnsupportedUpdate(msg)
        return columns[node.attr]
    if isinstance(node, ast.Constant):
        return pa.array([node.value] * length)
    if isinstance(node, ast.Name):
        value = _NAMES[node.id.lower()]
        return pa.array([value] * length, pa.null() if value is None else pa.bool_())
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, rows, length), _evaluate(node.right, rows, length)
        return _BINARY[type(node.op)](*_aligned(left, right))
    if isinstance(node, ast.UnaryOp):
        return pc.negate_checked(_evaluate(node.operand, rows, length))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    args = _aligned(*[_evaluate(arg, rows, length) for arg in node.args])
    return _FUNCTIONS[node.func.id.lower()](*args)


def _aligned(*arrays: pa.Array) -> list[pa.Array]:
    """Arrays with a null-typed literal cast to the others' type (SQL's untyped NULL)."""
    typed = next((a.type for a in arrays if not pa.types.is_null(a.type)), None)
    if typed is None:
        return list(arrays)
    return [a.cast(typed) if pa.types.is_null(a.type) else a for a in arrays]
