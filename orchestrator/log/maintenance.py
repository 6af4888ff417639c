"""A periodic pass run by one process at a time across every process sharing the log (the retention pass):
a row per pass names who holds it and until when, and when it last finished. A process claims the pass only
when nobody holds it (or the holder's time ran out: it died) and its last run is older than its period, so
a daily pass runs once a day however many processes try. Written once over both databases."""

from __future__ import annotations

from orchestrator.log.dialect import Conn


async def claim_pass(c: Conn, name: str, holder: str, at: float, every_s: float, hold_s: float) -> bool:
    """True when `holder` now holds the pass until `at + hold_s` (it is due and nobody else holds it)."""
    found = await c.values(
        "insert into maintenance (name, holder, until, done_at) values (:name, :holder, :until, null)"
        " on conflict (name) do update set holder = excluded.holder, until = excluded.until"
        " where (maintenance.until is null or maintenance.until < :at)"
        " and (maintenance.done_at is null or maintenance.done_at <= :due) returning holder",
        {"name": name, "holder": holder, "until": c.time(at + hold_s), "at": c.time(at), "due": c.time(at - every_s)})
    return bool(found)


async def end_pass(c: Conn, name: str, holder: str, at: float, done: bool) -> None:
    """Let the pass go; `done`: it finished at `at` (else it is due again at the next try)."""
    await c.send("update maintenance set until = null" + (", done_at = :at" if done else "")
                 + " where name = :name and holder = :holder", {"name": name, "holder": holder, "at": c.time(at)})
