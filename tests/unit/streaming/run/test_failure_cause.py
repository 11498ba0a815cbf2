"""A failed query's error names its cause, and says what to do when the disk is the problem."""

from __future__ import annotations

from streaming.run.runner import failure_cause

FOREACH_BATCH_FAILURE = """\
An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/repo/streaming/dead_letters.py", line 45, in append
    write_deltalake(
_internal.DeltaError: Failed to parse parquet: Unable to open file /home/t/part-0.parquet#1: \
Read-only file system (os error 30)
 SQLSTATE: 39000
"""


def test_the_cause_is_the_exception_ending_the_embedded_python_traceback():
    assert failure_cause(FOREACH_BATCH_FAILURE) == (
        "_internal.DeltaError: Failed to parse parquet: Unable to open file "
        "/home/t/part-0.parquet#1: Read-only file system (os error 30)"
    )


def test_without_a_traceback_the_first_line_is_the_cause():
    assert failure_cause("\njava.io.IOException: No space left on device\n\tat x\n") == (
        "java.io.IOException: No space left on device"
    )
