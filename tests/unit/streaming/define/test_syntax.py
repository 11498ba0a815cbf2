"""Code is compared by what it means: comments, docstrings and layout change nothing, and a
function's code takes in the project's functions and the plain values it reads."""

from __future__ import annotations

from typing import Any

from streaming.define.syntax import function_code, normalised

SOURCE = '''"""A module."""
LIMIT = 3


def over(x):
    """Whether x is over the limit."""
    return x > LIMIT  # strictly
'''
RESTYLED = """# Reworded and laid out anew.
LIMIT = (3)
def over(x): return (x > LIMIT)
"""


def test_comments_docstrings_and_layout_leave_the_tree_as_it_was() -> None:
    assert normalised(SOURCE) == normalised(RESTYLED)
    assert normalised(SOURCE) != normalised(SOURCE.replace("LIMIT = 3", "LIMIT = 4"))
    assert normalised(SOURCE) != normalised(SOURCE.replace("x > LIMIT", "x >= LIMIT"))


def _module(source: str) -> dict[str, Any]:
    """The namespace of a module of a user's package, run from ``source``."""
    namespace: dict[str, Any] = {"__name__": "userpkg.rules"}
    exec(compile(source, "<userpkg.rules>", "exec"), namespace)
    return namespace


CHECK = """
LIMIT = {limit}
UNUSED = {unused}


def rule(amount):
    return amount > LIMIT


def check(record):
    return rule(record["amount"])
"""


def test_a_functions_code_follows_the_functions_and_values_it_reads() -> None:
    def code(limit: int = 3, unused: int = 0) -> str:
        return function_code(_module(CHECK.format(limit=limit, unused=unused))["check"])

    assert code() == code(unused=1)  # what it does not read changes nothing
    assert code() != code(limit=4)  # a value its helper reads does
    changed = _module(CHECK.format(limit=3, unused=0).replace("amount > LIMIT", "amount < LIMIT"))
    assert function_code(changed["check"]) != code()  # and so does the helper's code


def test_a_value_a_function_closes_over_is_part_of_its_code() -> None:
    def rule(limit: int):  # type: ignore[no-untyped-def]
        return lambda amount: amount > limit

    assert function_code(rule(3)) == function_code(rule(3)) != function_code(rule(4))
