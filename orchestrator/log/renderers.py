"""Which front renders each debate's thread, in the SQLite log: a lease per debate.

Several fronts of one platform share a log (Slack HTTP fronts behind a load balancer, Discord shards).
Each debate's thread is written by one of them at a time, the one holding its lease (`renderer`, until
`renderer_until`): the front that starts a debate claims it, renews the leases of the debates it
follows every few seconds, and at start and on a timer claims the threads nobody holds (a front that
died stops renewing; its leases run out and another front takes its threads over). Claiming and
renewing are one statement: a lease that is free, run out or the caller's own is taken or extended.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlite_utils import Database

from orchestrator.log.records import to_iso

CHUNK = 400  # ids per statement: under SQLite's limit on bound parameters


def claim_threads(renderer: str, debate_ids: Sequence[str], lease_s: float,
                  at: float) -> Callable[[Database], list[str]]:
    def fn(db: Database) -> list[str]:
        held: list[str] = []
        for start in range(0, len(debate_ids), CHUNK):
            chunk = list(debate_ids[start:start + CHUNK])
            marks = ",".join("?" * len(chunk))
            db.execute(
                f"update debates set renderer = ?, renderer_until = ? where id in ({marks})"
                " and (renderer is null or renderer = ? or renderer_until is null or renderer_until < ?)",
                [renderer, to_iso(at + lease_s), *chunk, renderer, to_iso(at)])
            held += [r[0] for r in db.execute(
                f"select id from debates where id in ({marks}) and renderer = ?", [*chunk, renderer])]
        order = {debate_id: i for i, debate_id in enumerate(debate_ids)}
        return sorted(held, key=order.__getitem__)

    return fn


def release_threads(renderer: str, debate_ids: Sequence[str]) -> Callable[[Database], None]:
    def fn(db: Database) -> None:
        for start in range(0, len(debate_ids), CHUNK):
            chunk = list(debate_ids[start:start + CHUNK])
            marks = ",".join("?" * len(chunk))
            db.execute(f"update debates set renderer = null, renderer_until = null where id in ({marks})"
                       " and renderer = ?", [*chunk, renderer])

    return fn
