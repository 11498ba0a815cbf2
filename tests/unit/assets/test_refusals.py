"""A refused step fails with one line and its evidence, without a Python stack trace."""

from __future__ import annotations

from dagster import DagsterInstance, job, op

from assets.refusals import Refused, refusing
from streaming.errors import VersionError


def _failure(op_def):  # type: ignore[no-untyped-def]
    @job
    def one_step() -> None:
        op_def()

    result = one_step.execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False)
    assert not result.success
    [failure] = result.get_step_failure_events()
    return failure.event_specific_data


def test_a_refusal_is_one_line_with_its_evidence_and_no_stack():
    @op
    def gate() -> None:
        raise Refused(
            "promotion of customers v2 refused: column name matches 0.0% of keys\n(980 differ)",
            {"match_rate.name": 0.0, "failed_checks": "candidate_values"},
        )

    data = _failure(gate)
    line = "promotion of customers v2 refused: column name matches 0.0% of keys (980 differ)"
    assert data.error.message == line
    assert data.error.stack == [] and data.error.cause is None
    assert data.user_failure_data.description == line
    assert data.user_failure_data.metadata["match_rate.name"].value == 0.0
    assert data.user_failure_data.metadata["failed_checks"].value == "candidate_values"


def test_an_error_a_user_can_act_on_becomes_a_refusal():
    @op
    def rollback() -> None:
        with refusing():
            raise VersionError("customers has no previous live version to roll back to")

    data = _failure(rollback)
    assert data.error.message == "customers has no previous live version to roll back to"
    assert data.error.stack == []


def test_a_crash_keeps_its_stack_trace():
    @op
    def crash() -> None:
        with refusing():
            raise RuntimeError("a bug")

    assert _failure(crash).error.stack  # only errors a user can act on are refusals
