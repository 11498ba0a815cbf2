"""A forward-only version's first start: the copy of the live version's table and state at a cut
(``streaming.versions.forward_only`` says what that is and when it is allowed).

Under the new deployment's lock, before its query starts:

1. the cut: the live version's latest commit ``C`` (batch ``b``, end offsets, state versions),
   recorded as a start that is not complete yet;
2. each state partition's store at the version ``C`` records, into the new deployment's own;
3. the live table's files and log up to ``C``, then one entry of the new table's own: its
   application transaction at batch ``b`` and ``C``'s offsets and state versions, under the new
   code's fingerprint;
4. its Spark checkpoint continued from the live one's batch ``b``;
5. the start recorded as complete.

A SIGKILL anywhere before 5 leaves a start that is not complete: the next start deletes what was
copied and copies again from a new cut. After 5, the deployment resumes like any other (its
checkpoint holds batch ``b``), exactly once. The live version keeps running meanwhile: files it
collects while they are being copied make the copy start again from its newer commit.
"""

from __future__ import annotations

import shutil

from streaming.define.pipeline import Pipeline
from streaming.delta.table_copy import continue_copy, copy_table
from streaming.delta.table_reader import latest_commit
from streaming.delta.table_store import TableLocation
from streaming.deployment import Deployment
from streaming.deployment.record import state_partition_path
from streaming.errors import RunError, TableError
from streaming.kafka import offsets as off
from streaming.run.crash_point import crash_point
from streaming.settings import Settings
from streaming.state import StateStoreError
from streaming.state.store import copy_state
from streaming.versions.forward_only import (
    Cut,
    ForwardOnlyStart,
    begun,
    completed,
    read_start,
    write_start,
)
from streaming.versions.live_pointer import live_version

ATTEMPTS = 5  # cuts tried while the live version collects files the copy still needed
CRASH_POINT = "forward_copy"  # KAPPA_CRASH_AT=forward_copy:<step> dies after that step


def start_forward_only(
    settings: Settings, pipeline: Pipeline, deployment: Deployment
) -> ForwardOnlyStart:
    """Copy the live version's table and state into ``deployment`` (see the module docstring),
    unless a complete copy is there already; the caller holds the deployment's lock.

    Raises:
        RunError: the deployment ran already from a start of its own, there is no other live
            version, or it has committed nothing to start from.
    """
    start = read_start(deployment)
    if start is not None and start.complete:
        return start
    if start is None and _has_files(deployment):
        msg = (
            f"{deployment.id} has started before without --forward-only (it has a table or a "
            "checkpoint); a version starts forward-only at its first start: retire it first "
            f"(kappa retire {deployment.pipeline} {deployment.version})"
        )
        raise RunError(msg)
    failure = ""
    for _ in range(ATTEMPTS):
        _remove_copy(deployment)  # what a start that died half-way copied
        try:
            return _copy(settings, pipeline, deployment)
        except (StateStoreError, TableError, FileNotFoundError) as exc:
            failure = str(exc)
    msg = f"{deployment.id}: the copy of the live version failed {ATTEMPTS} times: {failure}"
    raise RunError(msg)


def _copy(settings: Settings, pipeline: Pipeline, deployment: Deployment) -> ForwardOnlyStart:
    live = live_version(settings.home, pipeline.name)
    if live is None or live == deployment.version:
        msg = f"{deployment.id} cannot start forward-only: it needs another live version ({live})"
        raise RunError(msg)
    source = Deployment(pipeline.name, live, settings.home)
    commit = latest_commit(source.table_path)
    if commit is None:
        msg = f"{deployment.id} cannot start forward-only: the live {source.id} committed nothing"
        raise RunError(msg)
    cut = Cut(
        version=live,
        batch_id=commit.batch_id,
        table_version=commit.table_version,
        offsets=off.to_spark(commit.end_offsets),
        state_versions=dict(commit.state_versions or {}),
    )
    start = begun(cut)
    write_start(deployment, start)
    crash_point(CRASH_POINT, 1)
    for partition, batch in sorted(cut.state_versions.items()):
        copy_state(
            state_partition_path(source.state_path, partition),
            state_partition_path(deployment.state_path, partition),
            batch,
        )
    crash_point(CRASH_POINT, 2)
    location = TableLocation.of(deployment.table_path)
    copy_table(TableLocation.of(source.table_path), location, cut.table_version)
    crash_point(CRASH_POINT, 3)
    own = continue_copy(
        location,
        cut.table_version,
        deployment.app_id,
        cut.batch_id,
        cut.offsets,
        deployment.id,
        pipeline.fingerprint,
        commit.state_versions,
    )
    crash_point(CRASH_POINT, 4)
    deployment.checkpoint.continue_from(source.checkpoint, cut.batch_id)
    if deployment.checkpoint.start_offsets() != cut.end_offsets:
        msg = (
            f"{source.id}: its checkpoint's batch {cut.batch_id} does not end where its table's "
            "commit of it does; its checkpoint or table was changed by hand"
        )
        raise RunError(msg)
    crash_point(CRASH_POINT, 5)
    done = completed(start, own)
    write_start(deployment, done)
    return done


def _has_files(deployment: Deployment) -> bool:
    paths = (deployment.table_path, deployment.checkpoint_path, deployment.state_path)
    return any(path.exists() for path in paths)


def _remove_copy(deployment: Deployment) -> None:
    """Delete a copy that died half-way (nothing ran on it: its start is not complete)."""
    for path in (deployment.table_path, deployment.checkpoint_path, deployment.state_path):
        shutil.rmtree(path, ignore_errors=True)
    deployment.forward_only_path.unlink(missing_ok=True)
