"""An independent reference for an every-match stream-stream join: clicks with every search of
the same user in the 10 minutes before them, left join, evaluated in plain Python on a prefix of
the topics, sharing no code with the operators.

Definition: late records (per partition, more than the grace below the largest event time
before them) are ignored. Each pair of a click and a search of its user with search ts in
[click ts - 10 min, click ts] is a row keyed by (click_id, query); a key of several pairs takes
the greatest (click (ts, partition, offset), search (ts, partition, offset)). A click without a
search is a row keyed by (click_id, null) once its partition's horizon (the least of the two
topics' largest event times in that partition, minus the grace) is past its ts; per click_id the
greatest such click.
"""

from __future__ import annotations

import json
from typing import Any

from bench.support.reference import Stamped
from tests.support.enrichment import GRACE_MS, Prefix, on_time

Late = set[tuple[str, int, int]]


def _ts(record: Stamped) -> int:
    return int(json.loads(record.value)["ts"])  # type: ignore[arg-type]


def _horizons(records: list[Stamped], prefix: Prefix) -> dict[int, int]:
    highest: dict[tuple[str, int], int] = {}
    for r in records:
        if r.offset < prefix.get(r.topic, {}).get(r.partition, 0):
            key = (r.topic, r.partition)
            highest[key] = max(highest.get(key, _ts(r)), _ts(r))
    partitions = {p for _, p in highest}
    return {
        p: min(highest[("clicks", p)], highest[("searches", p)]) - GRACE_MS
        for p in partitions
        if ("clicks", p) in highest and ("searches", p) in highest
    }


def clicks_with_searches_reference(
    records: list[Stamped], prefix: Prefix, before_ms: int = 600_000
) -> tuple[dict[tuple[str, str | None], dict[str, Any]], Late]:
    """The join on ``prefix``: rows by (click_id, query), and the late records."""
    clicks, late_c = on_time([r for r in records if r.topic == "clicks"], prefix, _ts)
    searches, late_s = on_time([r for r in records if r.topic == "searches"], prefix, _ts)
    horizon = _horizons(records, prefix)
    best: dict[tuple[str, str | None], tuple[tuple, dict[str, Any]]] = {}
    for c in clicks:
        click = json.loads(c.value)  # type: ignore[arg-type]
        user = c.key.decode()  # type: ignore[union-attr]
        base = {"click_id": click["click_id"], "user_id": user, "url": click["url"]}
        base["ts"] = click["ts"]
        matched = False
        for s in searches:
            search = json.loads(s.value)  # type: ignore[arg-type]
            if s.key != c.key or not click["ts"] - before_ms <= search["ts"] <= click["ts"]:
                continue
            matched = True
            rank = ((click["ts"], c.partition, c.offset), (search["ts"], s.partition, s.offset))
            row = {**base, "search_ts": search["ts"], "query": search["query"]}
            key = (click["click_id"], search["query"])
            if key not in best or best[key][0] < rank:
                best[key] = (rank, row)
        closed = click["ts"] < horizon.get(c.partition, click["ts"])
        if not matched and closed:
            rank = ((click["ts"], c.partition, c.offset), ())
            key = (click["click_id"], None)
            if key not in best or best[key][0] < rank:
                best[key] = (rank, {**base, "search_ts": None, "query": None})
    return {key: row for key, (_, row) in best.items()}, late_c | late_s
