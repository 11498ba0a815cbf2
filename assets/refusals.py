"""A step that refuses (a promotion gate, a rollback that lost a race, a bad version name) fails
with one line and its evidence as metadata, not with a Python stack trace.

A refusal is an expected outcome, not a crash: the run fails so that the runs list says so, and
its event log shows the reason and the numbers behind it. Dagster records a step failure's error
from the exception's traceback, except for an error it hoists from a user-code process, whose
serialized error it records as is; :class:`Refused` is such an error, with no stack, and a
:class:`dagster.Failure` too, so its description and metadata are the failure's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from dagster import Failure
from dagster._core.errors import DagsterUserCodeProcessError
from dagster._utils.error import SerializableErrorInfo

from streaming.errors import KappaError


class Refused(DagsterUserCodeProcessError, Failure):
    """Fail the step with ``reason`` (one line) and ``evidence`` as the failure's metadata."""

    def __init__(self, reason: str, evidence: Mapping[str, Any] | None = None) -> None:
        line = " ".join(reason.split())
        error = SerializableErrorInfo(message=line, stack=[], cls_name=None)
        super().__init__(line, user_code_process_error_infos=[error])
        Failure.__init__(self, description=line, metadata=evidence, allow_retries=False)


@contextmanager
def refusing(evidence: Mapping[str, Any] | None = None) -> Iterator[None]:
    """Turn an error a user can act on (a :class:`KappaError`) into a one-line refusal."""
    try:
        yield
    except KappaError as exc:
        raise Refused(str(exc), evidence) from None
