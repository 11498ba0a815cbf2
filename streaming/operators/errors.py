"""Errors of the operator layer, each saying what to fix."""

from __future__ import annotations


class OperatorError(Exception):
    """Base class of the operator layer's errors."""


class OperatorConfigError(OperatorError, ValueError):
    """An operator was declared with settings that cannot work (raised at construction)."""


class BatchError(OperatorError, ValueError):
    """A batch does not meet the input contract (missing columns, offsets out of range...)."""
