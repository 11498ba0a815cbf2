"""Looking at a deployment from outside: where a kill landed, and whether anything was lost.

Nothing here shares code with the pipeline's write path: phases are read from Spark's checkpoint
files and the Delta log, and tables are compared with ``bench.support.reference``, an
independent replay.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from bench.faults_workload import TOPIC, PoisonBytes, PoisonKind
from bench.support.reference import customers_state, replay
from streaming.delta.dead_letters import DeadLetters
from streaming.delta.table_reader import commits, read_arrow
from streaming.deployment import Deployment

BEFORE_ANY_WRITE = "mid-batch, before any write"
IN_DEAD_LETTERS = "after the dead-letter commit, before the table commit"
IN_DELTA_COMMIT = "inside the Delta commit (data files written, log entry not)"
BEFORE_CHECKPOINT = "after the Delta commit, before Spark's checkpoint commit"
BETWEEN_BATCHES = "between batches"
STARTING = "start-up (no batch planned yet)"


def in_flight(deployment: Deployment) -> bool:
    """Whether Spark has planned a batch it has not committed (cheap: two directory listings)."""
    checkpoint = deployment.checkpoint
    planned = max(checkpoint.planned_batches(), default=None)
    finished = max(checkpoint.committed_batches(), default=None)
    return planned is not None and (finished is None or planned > finished)


def txn_version(path: Path, app_id: str) -> int | None:
    if not DeltaTable.is_deltatable(str(path)):
        return None
    return DeltaTable(str(path)).transaction_version(app_id)


def orphan_files(table: Path) -> set[str]:
    """Data files in the table directory that no Delta log entry ever added (partial commits)."""
    log = table / "_delta_log"
    try:
        names = {n for n in os.listdir(table) if n.endswith(".parquet") or "#" in n}
        entries = [n for n in os.listdir(log) if n.endswith(".json") and n[:1].isdigit()]
    except FileNotFoundError:
        return set()
    added: set[str] = set()
    for entry in entries:
        for line in (log / entry).read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "add" in action:
                added.add(action["add"]["path"])
    return names - added


@dataclass
class Position:
    """The state of a deployment's checkpoint and tables at one moment."""

    planned: int | None  # last batch id in Spark's offset log
    finished: int | None  # last batch id in Spark's commit log
    table_batch: int | None  # last batch committed to the Delta table
    dead_letter_batch: int | None
    orphans: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, deployment: Deployment) -> Position:
        checkpoint = deployment.checkpoint
        return cls(
            max(checkpoint.planned_batches(), default=None),
            max(checkpoint.committed_batches(), default=None),
            txn_version(deployment.table_path, deployment.app_id),
            txn_version(deployment.dead_letter_path, deployment.app_id),
            orphan_files(deployment.table_path),
        )

    def phase(self, orphans_before: set[str]) -> str:
        """Where a process killed in this state was in its batch."""
        if self.planned is None:
            return STARTING
        if self.finished is not None and self.finished >= self.planned:
            return BETWEEN_BATCHES
        if self.table_batch is not None and self.table_batch >= self.planned:
            return BEFORE_CHECKPOINT
        if self.orphans - orphans_before:
            return IN_DELTA_COMMIT
        if self.dead_letter_batch is not None and self.dead_letter_batch >= self.planned:
            return IN_DEAD_LETTERS
        return BEFORE_ANY_WRITE


def watch_files(table: Path) -> tuple[int, int]:
    """(data files, log entries) in the table directory: cheap enough to poll every millisecond."""
    try:
        data = sum(1 for n in os.listdir(table) if n.endswith(".parquet"))
        logs = sum(1 for n in os.listdir(table / "_delta_log") if n.endswith(".json"))
    except FileNotFoundError:
        return (0, 0)
    return (data, logs)


@dataclass
class Verdict:
    """Table and dead letters against the independent replay, at the table's last commit."""

    records: int = 0
    expected_rows: int = 0
    table_rows: int = 0
    lost: int = 0  # expected rows missing from the table, or holding an older value
    extra: int = 0  # rows the reference does not have (e.g. a deleted key resurrected)
    duplicated: int = 0  # a key present more than once
    poison: int = 0
    dead_letters: int = 0
    dead_letters_missing: int = 0
    dead_letters_unexpected: int = 0  # for records that are not poison
    poison_kinds: dict[str, int] = field(default_factory=dict)  # poison in the whole log
    dead_letters_duplicated: int = 0
    wrong_reasons: list[str] = field(default_factory=list)
    batches_applied_twice: int = 0
    batch_gaps: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.extra
            or self.duplicated
            or self.dead_letters_missing
            or self.dead_letters_unexpected
            or self.dead_letters_duplicated
            or self.wrong_reasons
            or self.batches_applied_twice
            or self.batch_gaps
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def verify(bootstrap: str, deployment: Deployment, poison_bytes: PoisonBytes) -> Verdict:
    """Compare the table's last commit with the reference replay of the records it covers,
    and the dead letters with the poison in the log.

    Order matters: the table's history first, then the dead letters (a batch writes its letters
    before its table commit, so every letter for poison below the table's ends is there), then
    the replay (it holds every record any letter came from)."""
    history = commits(deployment.table_path)
    last = history[-1]
    ends = last.end_offsets.get(TOPIC, {})
    letters = DeadLetters(deployment.dead_letter_path, deployment.app_id).read().to_pylist()
    log = replay(bootstrap, TOPIC)
    records = [r for r in log if r.offset < ends.get(r.partition, 0)]
    expected = customers_state(records)
    rows = read_arrow(deployment.table_path, last.table_version).to_pylist()
    keys = Counter(row["customer_id"] for row in rows)
    table = {row["customer_id"]: row for row in rows}
    v = Verdict(records=len(records), expected_rows=len(expected), table_rows=len(rows))
    wrong = [k for k, row in expected.items() if table.get(k) != row]
    v.duplicated = sum(n - 1 for n in keys.values())
    v.lost = len(wrong)
    v.extra = len(set(table) - set(expected))
    v.examples = [f"{k}: table {table.get(k)} != reference {expected[k]}" for k in wrong[:3]]
    ids = [c.batch_id for c in history]
    v.batches_applied_twice = len(ids) - len(set(ids))
    v.batch_gaps = sum(1 for a, b in itertools.pairwise(ids) if b != a + 1)
    poison = {
        (r.partition, r.offset): kind
        for r in log
        if r.value is not None and (kind := poison_bytes.get((r.key, r.value))) is not None
    }
    _check_dead_letters(v, letters, poison, ends)
    return v


def _check_dead_letters(
    v: Verdict,
    letters: list[dict[str, Any]],
    poison: dict[tuple[int, int], PoisonKind],
    ends: dict[int, int],
) -> None:
    positions = Counter((row["partition"], row["offset"]) for row in letters)
    count_dead_letters(v, positions, poison, ends)
    for row in letters:
        kind = poison.get((row["partition"], row["offset"]))
        if kind is not None and kind.reason not in (row["error"] or ""):
            v.wrong_reasons.append(f"{kind.name}: {row['error']}")
    missing = {pos for pos in poison if pos[1] < ends.get(pos[0], 0)} - set(positions)
    missing_kinds = Counter(poison[p].name for p in missing)
    v.examples += [f"not dead-lettered: {n} x {kind}" for kind, n in missing_kinds.items()]
    v.poison_kinds = dict(Counter(kind.name for kind in poison.values()))


def count_dead_letters(
    v: Verdict,
    positions: Counter[tuple[int, int]],
    poison: dict[tuple[int, int], PoisonKind],
    ends: dict[int, int],
) -> None:
    """Fill ``v``'s dead-letter counts from the letters' (partition, offset) positions and the
    positions of the poison in the log: poison below the table's ``ends`` must be dead-lettered
    exactly once (letters for poison beyond them may already exist); any other letter is for a
    clean record."""
    covered = {pos for pos in poison if pos[1] < ends.get(pos[0], 0)}
    v.poison = len(covered)
    v.dead_letters = sum(positions.values())
    v.dead_letters_duplicated = sum(n - 1 for n in positions.values())
    v.dead_letters_missing = len(covered - set(positions))
    clean = sorted(set(positions) - set(poison))
    v.dead_letters_unexpected = len(clean)
    v.examples += [f"dead letter for a clean record at {pos}" for pos in clean[:3]]
