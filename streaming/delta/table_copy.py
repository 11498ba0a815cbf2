"""A compacted table copied as of one of its versions into another location, and continued there.

A forward-only version starts from the live version's table (``streaming.versions.forward_only``):
the data and deletion-vector files live at the version are copied, with the log entries (and
checkpoints) up to it, so the copy reads as the source did at that version and shares no file
with it. The copy then gets one entry of its own, :func:`continue_copy`: the application
transaction of its new writer and the commit info of the batch it continues from, so the sink
resumes it as its own table.

A copy is not atomic: its caller redoes it from scratch when it died half-way.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from typing import Any

from streaming.delta.commit_info import commit_info
from streaming.delta.log_entries import commit_info as commit_action
from streaming.delta.log_entries import publish, txn
from streaming.delta.log_replay import replay
from streaming.delta.table_store import TableLocation, TableStore

_LOG_FILE = re.compile(r"^_delta_log/(\d{20})\.(json|checkpoint\.parquet)$")
OPERATION = "FORWARD-ONLY START"


def copy_table(source: TableLocation, target: TableLocation, version: int) -> int:
    """Copy ``source`` as of ``version`` into ``target``; returns how many bytes were copied.

    Raises:
        TableError: the source's log or a file live at ``version`` is missing.
    """
    src, dst = TableStore(source), TableStore(target)
    snapshot = replay(src, up_to=version)
    names = set()
    for entry in snapshot.files.values():
        names.add(entry.path)
        dv = entry.deletion_vector
        if dv is not None and dv.storage_type == "u":
            names.add(dv.file_name)
    log = [
        name
        for name, _, _ in src.list("_delta_log/")
        if (match := _LOG_FILE.match(name)) and int(match.group(1)) <= version
    ]
    # The files first, then the log: no entry of the copy names a file it lacks.
    return sum(_copy_file(src, dst, name) for name in [*sorted(names), *sorted(log)])


def _copy_file(src: TableStore, dst: TableStore, name: str) -> int:
    """Copy one file; on local disks without reading it into memory."""
    if src.location.is_local and dst.location.is_local:
        target = dst.location.local_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src.location.local_path / name, target)
        return target.stat().st_size
    data = src.read(name)
    dst.write(name, data)
    return len(data)


def continue_copy(
    target: TableLocation,
    version: int,
    app_id: str,
    batch_id: int,
    end_offsets: Mapping[str, Any],
    deployment: str,
    fingerprint: str,
    state_versions: Mapping[int, int] | None,
) -> int:
    """Publish the copy's own entry after ``version`` (put-if-absent): ``app_id`` has committed
    ``batch_id``, whose commit records ``end_offsets`` and ``state_versions``. Returns the
    entry's table version.

    Raises:
        CommitConflictError: the copy has an entry there already.
    """
    custom = commit_info(batch_id, dict(end_offsets), deployment, fingerprint, state_versions)
    actions = [commit_action(OPERATION, version, custom), txn(app_id, batch_id)]
    publish(TableStore(target), version + 1, actions)
    return version + 1
