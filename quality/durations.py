"""Lengths of time in the public API are ``timedelta``s. The older spelling, a number of
milliseconds (a ``*_ms=`` parameter, or a number where the timedelta goes), still works, with a
``DeprecationWarning`` saying what to write instead.

In ``quality`` because it is the lowest layer: rules (``NotInFuture``) use it, and so do the
stream operators' windows.
"""

from __future__ import annotations

import warnings
from datetime import timedelta

MILLISECOND = timedelta(milliseconds=1)


def timedelta_or_ms(
    value: timedelta | int | None,
    ms: int | None,
    *,
    what: str,
    names: tuple[str, str],
    stacklevel: int,
) -> timedelta | None:
    """``value``, or the deprecated milliseconds (``ms``, or a number given as ``value``), as a
    timedelta; None when neither is given.

    Args:
        what: the length, for messages (``"a tumbling window's size"``).
        names: the parameter's name and its deprecated name (``("size", "size_ms")``).
        stacklevel: the warning's, counted from this function (the caller's caller is 3).

    Raises:
        ValueError: both are given, or the value is neither a timedelta nor an integer.
    """
    new, old = names
    if value is not None and ms is not None:
        msg = f"{what}: give {new}= (a timedelta) or {old}=, not both"
        raise ValueError(msg)
    if value is None and ms is None:
        return None
    if isinstance(value, timedelta):
        return value
    number = ms if value is None else value
    if not isinstance(number, int) or isinstance(number, bool):
        msg = f"{what} must be a timedelta, got {number!r}"
        raise ValueError(msg)
    warnings.warn(
        f"{what} in milliseconds ({old}={number}) is deprecated: give "
        f"{new}=timedelta(milliseconds={number})",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return number * MILLISECOND
