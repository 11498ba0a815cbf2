"""Reading several tables at one cut of the log.

Every table commit records the input offsets it reflects, and every deployment ends its batches
at the shared cuts (``streaming.kafka.cuts``). A consistent read picks the newest cut at which
every table read has a batch commit (its offsets equal to the cut's on the table's topics) and
reads each table at that commit's version. So for every topic two of the tables share, both
reflect exactly the same offsets, and each table is what its pipeline makes of that prefix.

There may be no such cut close to the newest data: a deployment is stopped or far behind while
the log moves on. Then the read is refused, saying which table holds it back, unless the cut is
within ``max_lag_s`` of the newest cut; it never mixes cuts. (``--latest`` reads each table at
its newest commit instead, and says so.)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deltalake import DeltaTable

from streaming.delta.commit_info import Commit
from streaming.delta.table_reader import recent_commits
from streaming.deployment import Deployment
from streaming.errors import QueryError
from streaming.kafka import offsets as off
from streaming.kafka.cuts import Cut

# Log entries read first per table when looking for a cut; more only when none matches.
RECENT_ENTRIES = (64, 1024, None)


class NoConsistentCutError(QueryError):
    """The tables have no commit at one cut close enough to the newest data."""


@dataclass(frozen=True)
class Source:
    """A table to read at a cut: its deployment and the table, opened."""

    deployment: Deployment
    table: DeltaTable


@dataclass(frozen=True)
class CutChoice:
    """The cut a consistent read uses, and the commit of each table at it (by name)."""

    cut: Cut
    newest: Cut  # the newest cut in the log when the choice was made
    commits: dict[str, Commit]

    def age_s(self, now_s: float | None = None) -> float:
        return max(0.0, (now_s if now_s is not None else time.time()) - self.cut.at_ms / 1000)


def choose_cut(
    sources: Mapping[str, Source],
    cuts: Sequence[Cut],
    max_lag_s: float,
    now_s: float | None = None,
) -> CutChoice:
    """The newest cut at which every source has a batch commit; refused when no such cut is
    kept, or when it is older than ``max_lag_s`` and not the newest cut.

    Raises:
        NoConsistentCutError: with the tables holding the read back and what to do.
    """
    now = time.time() if now_s is None else now_s
    if not cuts:
        msg = (
            "no cut of the log is kept yet (deployments take cuts as they run); start the "
            "tables' deployments, or read each table's newest commit with --latest"
        )
        raise NoConsistentCutError(msg)
    newest = cuts[-1]
    choice: tuple[Cut, dict[str, Commit]] | None = None
    history: dict[str, list[Commit]] = {}
    for entries in RECENT_ENTRIES:
        history = {name: recent_commits(s.table, entries) for name, s in sources.items()}
        _check_committed(sources, history)
        choice = _newest_common(cuts, history)
        if choice is not None:
            break
        if all(entries is not None and len(h) < entries for h in history.values()):
            break  # every table's whole history was read
    if choice is None:
        msg = (
            f"no kept cut of the log (#{cuts[0].id}-#{newest.id}) has a commit of every table: "
            f"{_behind(sources, history, newest)}; {_WAYS_OUT}"
        )
        raise NoConsistentCutError(msg)
    cut, commits = choice
    age = now - cut.at_ms / 1000
    if cut.id != newest.id and age > max_lag_s:
        msg = (
            f"no consistent cut within {max_lag_s:g} s of the newest data: the newest cut every "
            f"table has a commit at is #{cut.id}, taken {age:.1f} s ago; "
            f"{_behind(sources, history, newest)}; {_WAYS_OUT}"
        )
        raise NoConsistentCutError(msg)
    return CutChoice(cut, newest, commits)


_WAYS_OUT = (
    "read each table's newest commit instead with --latest, or accept an older cut with "
    "--max-lag SECONDS"
)


def _check_committed(sources: Mapping[str, Source], history: Mapping[str, list[Commit]]) -> None:
    for name, commits in history.items():
        if not commits:
            pipeline = sources[name].deployment.pipeline
            msg = (
                f"{sources[name].deployment.id} has committed no batch yet; run it first "
                f"(kappa run {pipeline} --until-caught-up, or kappa deploy {pipeline})"
            )
            raise NoConsistentCutError(msg)


def _newest_common(
    cuts: Sequence[Cut], history: Mapping[str, list[Commit]]
) -> tuple[Cut, dict[str, Commit]] | None:
    by_offsets = {
        name: {off.dumps(c.end_offsets): c for c in reversed(commits)}  # newest wins
        for name, commits in history.items()
    }
    partitions = {name: _partitions(commits[0]) for name, commits in history.items()}
    for cut in reversed(cuts):
        found: dict[str, Commit] = {}
        for name, commits in by_offsets.items():
            at = cut.on(partitions[name])
            commit = None if at is None else commits.get(off.dumps(at))
            if commit is None:
                break
            found[name] = commit
        else:
            return cut, found
    return None


def _partitions(commit: Commit) -> dict[str, list[int]]:
    return {topic: sorted(parts) for topic, parts in commit.end_offsets.items()}


def _behind(sources: Mapping[str, Source], history: Mapping[str, list[Commit]], newest: Cut) -> str:
    """Which tables are behind the newest cut, by how many records, and whether they run."""
    notes = []
    for name, commits in history.items():
        latest = commits[0]
        at = newest.on(_partitions(latest))
        behind = off.total_lag(latest.end_offsets, at) if at is not None else None
        if behind == 0:
            continue
        deployment = sources[name].deployment
        running = deployment.lock.holder() is not None
        state = "running" if running else f"not running (kappa deploy {deployment.pipeline})"
        amount = "an unknown number of" if behind is None else f"{behind:,}"
        notes.append(f"{deployment.id} is {amount} records behind cut #{newest.id}, {state}")
    return "; ".join(notes) or "every table is at the newest cut"
