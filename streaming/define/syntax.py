"""What a piece of Python code means, without its comments, docstrings or layout.

The fingerprint and a deployment's pin compare code by its syntax tree rather than its bytes,
so a reworded comment, a docstring or a reformat changes nothing, while any change of what runs
does. A tree is dumped with ``ast.dump`` (no line or column numbers) after removing the
docstrings of the module, its classes and functions.

:func:`function_code` gives the same for one function a user wrote (a stateful function): its
own tree, the plain values it closes over and the globals it reads, following the project's
functions it calls. It is how a change of such a function is told apart from a change elsewhere
in its module.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
from collections.abc import Callable
from decimal import Decimal
from types import CodeType, FunctionType, ModuleType
from typing import Any

_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_PLAIN = (type(None), bool, int, float, complex, str, bytes, Decimal)


def normalised(source: str) -> str:
    """``source``'s syntax tree without docstrings, as text (``ast.dump``, no positions).

    Raises:
        SyntaxError: ``source`` is not Python.
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, _DOCUMENTED) and _has_docstring(node.body):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=True, include_attributes=False)


def tree_digest(source: str) -> str:
    """The SHA-256 of :func:`normalised` ``source``."""
    return hashlib.sha256(normalised(source).encode()).hexdigest()


def _has_docstring(body: list[ast.stmt]) -> bool:
    first = body[0] if body else None
    return (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )


def function_source(function: Callable[..., Any]) -> str:
    """The normalised tree of a function's own source (without a source file, a digest of its
    bytecode; a builtin, its name)."""
    try:
        return normalised(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        code = getattr(function, "__code__", None)
        if isinstance(code, CodeType):
            return f"bytecode {_bytecode(code)}"
        return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', '?')}"


def _bytecode(code: CodeType) -> str:
    """A digest of what ``code`` does: its instructions, constants and names (nested code
    objects by their own digest), not where it came from."""
    consts = [_bytecode(c) if isinstance(c, CodeType) else repr(c) for c in code.co_consts]
    parts = [code.co_code.hex(), repr(consts), repr(code.co_names), repr(code.co_varnames)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def function_code(function: Callable[..., Any], project: frozenset[str] = frozenset()) -> str:
    """A digest of what ``function`` runs: its normalised source, the plain values it closes
    over, and the globals its code names: plain values by value, functions and classes of the
    ``project`` packages (top-level names; default: the function's own) by their own code, in
    turn, anything else by its name."""
    if not project:
        project = frozenset({(getattr(function, "__module__", None) or "").split(".")[0]})
    parts: list[str] = []
    _describe(function, project, parts, set())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _describe(value: Any, project: frozenset[str], parts: list[str], seen: set[int]) -> None:
    if id(value) in seen:
        parts.append("<seen>")
        return
    seen.add(id(value))
    if isinstance(value, FunctionType) and _in_project(value, project):
        parts.append(function_source(value))
        cells = value.__closure__ or ()
        for name, cell in zip(value.__code__.co_freevars, cells, strict=False):
            try:
                content = cell.cell_contents
            except ValueError:  # not assigned yet
                continue
            parts.append(f"closure {name}:")
            _describe(content, project, parts, seen)
        for name in sorted(_names(value.__code__)):
            if name in value.__globals__:
                parts.append(f"global {name}:")
                _describe(value.__globals__[name], project, parts, seen)
    elif isinstance(value, type) and _in_project(value, project):
        parts.append(f"class {value.__qualname__}")
        for name, attribute in sorted(vars(value).items()):
            inner = getattr(attribute, "__func__", attribute)  # static and class methods
            if isinstance(inner, FunctionType) or _is_plain(inner):
                parts.append(f"attribute {name}:")
                _describe(inner, project, parts, seen)
    elif isinstance(value, ModuleType) and _in_project(value, project):
        try:
            parts.append(normalised(inspect.getsource(value)))
        except (OSError, TypeError, SyntaxError):
            parts.append(f"module {_module_name(value)}")
    elif _is_plain(value):
        parts.append(_plain(value))
    elif isinstance(value, ModuleType):
        parts.append(f"module {_module_name(value)}")
    else:
        module = getattr(value, "__module__", None) or type(value).__module__
        name = getattr(value, "__qualname__", None) or type(value).__qualname__
        shown = repr(value)
        # A repr that shows an address differs in every process: the name says enough then.
        parts.append(f"{module}.{name}" + ("" if " at 0x" in shown else f" {shown}"))


def _module_name(module: ModuleType) -> str:
    """A module's own name: a pinned copy keeps it in its spec (``__name__`` is the pin's)."""
    spec = getattr(module, "__spec__", None)
    return str(getattr(spec, "name", None) or module.__name__)


def _in_project(value: Any, project: frozenset[str]) -> bool:
    module = _module_name(value) if isinstance(value, ModuleType) else value.__module__
    return (module or "").split(".")[0] in project


def _names(code: CodeType) -> set[str]:
    """The global (and attribute) names ``code`` and the code nested in it use."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            names |= _names(constant)
    return names


def _is_plain(value: Any) -> bool:
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (tuple, list, frozenset, set)):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_is_plain(k) and _is_plain(v) for k, v in value.items())
    return False


def _plain(value: Any) -> str:
    """A plain value as text, the same in every process (sets sorted)."""
    if isinstance(value, (frozenset, set)):
        return f"{type(value).__name__}({sorted(map(_plain, value))})"
    if isinstance(value, dict):
        items = sorted((_plain(k), _plain(v)) for k, v in value.items())
        return f"dict({items})"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}({[_plain(v) for v in value]})"
    return repr(value)
