"""Errors raised by the quality package; each message says what is wrong and what to do."""


class QualityError(Exception):
    """Base class of quality-package errors."""


class SpecError(QualityError, ValueError):
    """A table spec, rule or comparison policy is invalid."""


class ResultFileError(QualityError):
    """A saved quality result cannot be read back."""
