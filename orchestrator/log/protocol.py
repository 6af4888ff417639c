"""`DebateLog`: the one interface the rest of the program has to the debate log, each operation once.

`Store` (sqlite.py) runs each operation in the thread that owns a SQLite file's connection;
`PostgresLog` (postgres/store.py) on a pooled connection; each call is one transaction. The operations
are in reads.py, writes.py, team.py, renderers.py and each dialect's search. Every read a chat user
makes passes a `Scope`, applied inside the query before any limit; `None` is the operator on the host
and sees everything. A start is admitted first (`admit`: the quotas counted and the debate's row
reserved in one transaction, across every process sharing the log). Writes come from the log sink
(every event, before any platform sees it) and from the adapters (votes, platform message ids,
request keys).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Self, TypeVar

from orchestrator.brief.models import Brief
from orchestrator.budgets import CallUsage, SpentCall
from orchestrator.log import audit, maintenance, page_keys, purge, reads, renderers, spend, team, workspaces, writes
from orchestrator.log.calibration import Calibration, calibration
from orchestrator.log.dialect import Conn
from orchestrator.log.jury import JuryFigures, jury_figures
from orchestrator.log.records import DebateRecord, DebateSummary, JudgeAgreement, MessageRecord, Scope, SearchHit, Tally
from orchestrator.models import ChannelDefaults, DebateSpec, Interjection, Outcome, Turn, Verdict, Vote, now
from orchestrator.quotas import Quota

T = TypeVar("T")
Op = Callable[[Conn], Awaitable[T]]


def _at(at: float | None) -> float:
    return at if at is not None else now()


class DebateLog(ABC):
    """`runner` names the process that runs the debates this handle creates ("serve:<host>",
    "cli:<host>:<pid>"), recorded on the debates it admits or creates. `readonly=True` opens the log
    for reading only: no migration, and every write raises ReadOnlyLogError."""

    runner: str | None

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def _write(self, fn: Op[T]) -> T: ...

    @abstractmethod
    async def _read(self, fn: Op[T], empty: T) -> T:
        """`empty`: the answer of a log nothing was ever written to (a reader need not find its tables)."""

    async def _read_one_statement(self, fn: Op[T], empty: T) -> T:
        """A read that is one statement (a snapshot of its own): `_read`, where a log can spare the
        transaction around it."""
        return await self._read(fn, empty)

    async def _write_one_statement(self, fn: Op[T]) -> T:
        """A write that is one statement (atomic on its own) on a log with foreign keys (`send_debate_exists`
        sends nothing there): `_write`, where a log can spare the transaction around it."""
        return await self._write(fn)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- writes ---------------------------------------------------------------------------------

    async def create_debate(self, spec: DebateSpec, *, at: float | None = None) -> None:
        """Insert the debate (running, this runner's) and its seats; admitted already, fill in where it landed."""
        await self._write(lambda c: writes.create_debate(c, spec, _at(at), self.runner))

    async def admit(self, spec: DebateSpec, quota: Quota, *, at: float | None = None) -> None:
        """Reserve the debate's place under `quota`: count and insert it (running, this runner's) in one
        transaction, or raise QuotaExceeded and log nothing. Its DebateStarted later fills in the thread."""
        await self._write(lambda c: writes.admit(c, spec, quota, _at(at), self.runner))

    async def add_sources(self, debate_id: str, brief: Brief, *, at: float | None = None) -> None:
        """Add `brief`'s sources to a debate's (a `continue` that brings more); a number there already stays."""
        await self._write(lambda c: writes.send_sources(c, debate_id, brief, _at(at)))

    async def add_turn(self, turn: Turn) -> int:
        return await self._write(lambda c: writes.add_turn(c, turn))

    async def add_call(self, call: CallUsage) -> None:
        """Log a model call that is not a debater's turn (a judge pass, a summary) with its estimated cost."""
        await self._write_one_statement(lambda c: spend.add_call(c, call))

    async def spent_calls(self, since: float) -> list[SpentCall]:
        """Every model call logged since `since` (debaters' turns and the rest), with whom it counts for."""
        return await self._read(lambda c: spend.spent_calls(c, since), [])

    async def add_notice(self, debate_id: str, level: str, text: str, *, at: float | None = None) -> None:
        await self._write(lambda c: writes.add_notice(c, debate_id, level, text, _at(at)))

    async def set_verdict(self, debate_id: str, verdict: Verdict, *, at: float | None = None, number: int = 1) -> None:
        """Verdict `number` of the debate (1: the first; 2, 3, …: after each `continue`), replaced if it exists."""
        await self._write_one_statement(lambda c: writes.set_verdict(c, debate_id, verdict, _at(at), number))

    async def finish_debate(self, debate_id: str, outcome: Outcome, *, at: float | None = None) -> None:
        await self._write(lambda c: writes.finish_debate(c, debate_id, outcome, _at(at)))

    async def fail_unstarted(self, debate_id: str, error: str, *, at: float | None = None) -> bool:
        """End the debate failed with `error` if it runs with no root message recorded (a start a front left
        behind); whether it did."""
        return await self._write(lambda c: writes.fail_unstarted(c, debate_id, error, _at(at)))

    async def running_runners(self, prefix: str) -> list[str]:
        """The runners named `prefix…` (e.g. "cli:<host>:") with debates the log calls running."""
        return await self._read(lambda c: writes.running_runners(c, prefix), [])

    async def fail_runner(self, runner: str, error: str, *, at: float | None = None) -> list[str]:
        """End every debate `runner` left running as failed, with `error`; returns their ids."""
        return await self._write(lambda c: writes.fail_runner(c, runner, error, _at(at)))

    async def record_vote(self, vote: Vote, scope: Scope | None = None) -> Tally:
        return await self._write(lambda c: writes.record_vote(c, vote, scope))

    async def set_message(self, debate_id: str, key: str, platform: str, channel: str | None, message_id: str,
                          *, final: bool = False) -> None:
        """Remember which platform message `key` (e.g. "root", "turn:2:B") became; `final` once it shows
        its final text (that sticks until the key names another message)."""
        await self._write_one_statement(
            lambda c: writes.set_message(c, debate_id, key, platform, channel, message_id, final))

    async def claim_request(self, key: str, *, keep_s: float = 86_400.0) -> bool:
        """True the first time `key` (a platform's request id) is claimed; False for any repeat."""
        return await self._write(lambda c: writes.claim_request(c, key, time.time(), keep_s))

    async def claim_workspaces(self, renderer: str, platform: str, workspaces: Sequence[str],
                               lease_s: float) -> list[str]:
        """Of `workspaces` ('' for none) of `platform`, those `renderer` now holds (in the order given):
        each one free, whose lease ran out, or its own gets a lease until now + `lease_s` (renderers.py)."""
        if not workspaces:
            return []
        return await self._write(lambda c: renderers.claim_workspaces(c, renderer, platform, workspaces, lease_s,
                                                                      time.time()))

    async def release_workspaces(self, renderer: str, platform: str, workspaces: Sequence[str]) -> None:
        if workspaces:
            await self._write(lambda c: renderers.release_workspaces(c, renderer, platform, workspaces))

    # -- the team in the loop ---------------------------------------------------------------------

    async def add_interjection(self, note: Interjection, *, max_waiting: int) -> int:
        """Queue an audience note for the debate's next round; returns how many now wait (this one
        included). Raises InterjectionRefused when the debate is not running or `max_waiting` wait already."""
        return await self._write(lambda c: team.add_interjection(c, note, max_waiting))

    async def take_interjections(self, debate_id: str, round: int, limit: int) -> list[Interjection]:
        """The notes for `round`'s prompts, oldest first: those taken for it already (a step run again
        gets the same answer) and waiting ones up to `limit` in all, now marked with `round`. Most rounds
        find none: one read says so, without the write's transaction and lock."""
        if not await self._read_one_statement(lambda c: team.may_take_interjections(c, debate_id, round), True):
            return []
        return await self._write(lambda c: team.take_interjections(c, debate_id, round, limit))

    async def begin_continuation(self, debate_id: str, *, at: float | None = None, quota: Quota | None = None,
                                 requested_by: str | None = None, facts: Interjection | None = None) -> int:
        """A completed debate with a verdict goes on: it is running again and its segment count grows;
        returns the new segment's number (2, 3, …). Raises ContinuationRefused with the reason.

        Admitted like a start, in the same transaction: under `quota` (None counts nothing) for
        `requested_by` (None: the operator), who then holds its running slot from `at`; it counts as one of
        their starts this hour. Raises QuotaExceeded naming the limit. `facts`, the new facts given with it,
        are stored only when it begins."""
        return await self._write(lambda c: team.begin_continuation(c, debate_id, quota, requested_by, facts, _at(at)))

    async def set_channel_defaults(
        self, platform: str, workspace: str | None, channel: str, defaults: ChannelDefaults, *, by: str | None = None
    ) -> None:
        await self._write(lambda c: team.set_channel_defaults(c, platform, workspace, channel, defaults, by, now()))

    async def interjections(self, debate_id: str) -> list[Interjection]:
        return await self._read(lambda c: team.interjections(c, debate_id), [])

    async def channel_defaults(self, platform: str, workspace: str | None, channel: str) -> ChannelDefaults:
        """What the channel's admins set (`ChannelDefaults()` when nothing was)."""
        return await self._read_one_statement(lambda c: team.channel_defaults(c, platform, workspace, channel),
                                              ChannelDefaults())

    # -- data that leaves (purge.py): whole debates, one transaction each --------------------------

    async def purge_targets(self, selection: purge.PurgeSelection) -> list[purge.PurgeTarget]:
        """The debates `selection` picks, oldest first, with the rows of each kind that would go."""
        return await self._read(lambda c: purge.purge_targets(c, selection), [])

    async def purge_debate(self, debate_id: str, reason: purge.Reason, *, at: float | None = None) -> int | None:
        """Delete the debate whole in one transaction (its spend kept as text-free sums, a tombstone left);
        its segment count, or None when the log does not hold it."""
        return await self._write(lambda c: purge.purge_debate(c, debate_id, reason, _at(at)))

    async def purged(self, debate_id: str) -> dict[str, object] | None:
        """The tombstone of a purged debate (id, purged_at, reason), or None."""
        return await self._read(lambda c: purge.purged(c, debate_id), None)

    async def forget_user(self, user: str) -> purge.Forgotten:
        """Delete `user`'s votes and notes, and replace their id and names wherever else they appear."""
        return await self._write(lambda c: purge.forget_user(c, user))

    async def schedule_uninstall(self, platform: str, workspace: str, *, at: float, purge_after: float) -> None:
        """The app was removed from `workspace`: its data is purged once `purge_after` has passed."""
        await self._write(lambda c: workspaces.schedule_uninstall(c, platform, workspace, at, purge_after))

    async def cancel_uninstall(self, platform: str, workspace: str) -> bool:
        """A reinstall within the grace: True when a purge was waiting (it will not happen)."""
        return await self._write(lambda c: workspaces.cancel_uninstall(c, platform, workspace))

    async def due_uninstalls(self, at: float) -> list[tuple[str, str]]:
        return await self._read(lambda c: workspaces.due_uninstalls(c, at), [])

    async def note_org(self, platform: str, workspace: str, org: str) -> None:
        """`workspace` belongs to the organization `org` (Slack Enterprise Grid)."""
        await self._write(lambda c: workspaces.note_org(c, platform, workspace, org))

    async def org_of(self, platform: str, workspace: str) -> str | None:
        return await self._read(lambda c: workspaces.org_of(c, platform, workspace), None)

    async def org_workspaces(self, platform: str, org: str) -> list[str]:
        return await self._read(lambda c: workspaces.org_workspaces(c, platform, org), [])

    async def claim_pass(self, name: str, holder: str, *, at: float, every_s: float, hold_s: float) -> bool:
        """Hold the periodic pass `name` (maintenance.py) if it is due and nobody else holds it."""
        return await self._write(lambda c: maintenance.claim_pass(c, name, holder, at, every_s, hold_s))

    async def end_pass(self, name: str, holder: str, *, at: float, done: bool) -> None:
        await self._write(lambda c: maintenance.end_pass(c, name, holder, at, done))

    # -- the audit trail (audit.py): who changed what, never message text ---------------------------

    async def add_audit(self, entry: audit.AuditEntry) -> None:
        await self._write(lambda c: audit.send_audit(c, entry))

    async def audit(self, since: float, limit: int = 1000) -> list[audit.AuditEntry]:
        """The entries since `since`, newest first."""
        return await self._read(lambda c: audit.audit_entries(c, since, limit), [])

    async def last_audit_detail(self, action: audit.AuditAction) -> str | None:
        return await self._read(lambda c: audit.last_detail(c, action), None)

    async def prune_audit(self, before: float) -> int:
        return await self._write(lambda c: audit.prune_audit(c, before))

    # -- reads ----------------------------------------------------------------------------------

    async def get_debate(
        self, id_or_prefix: str, scope: Scope | None = None, *, turns: bool = True
    ) -> DebateRecord | None:
        """One debate by id or unique prefix (>= 4 chars) among those `scope` sees; None if unknown.
        AmbiguousIdError when a prefix matches several visible debates (it lists only those).
        `turns=False` leaves out turns and notices: enough for a vote or a quote."""
        return await self._read(lambda c: reads.get_debate(c, id_or_prefix, scope, turns), None)

    async def find_by_message(
        self, platform: str, channel: str, message_id: str, scope: Scope | None = None
    ) -> str | None:
        return await self._read_one_statement(
            lambda c: reads.find_by_message(c, platform, channel, message_id, scope), None)

    async def debate_status(self, debate_id: str) -> str | None:
        """The status of the debate with this full id (`running`, `completed`, …), None if unknown: one column,
        where a start checks its debate is still running (`get_debate` reads and validates the whole record)."""
        return await self._read_one_statement(lambda c: reads.debate_status(c, debate_id), None)

    async def get_message(self, debate_id: str, key: str) -> str | None:
        return await self._read_one_statement(lambda c: reads.get_message(c, debate_id, key), None)

    async def messages(self, debate_id: str) -> dict[str, MessageRecord]:
        return await self._read_one_statement(lambda c: reads.messages(c, debate_id), {})

    async def threads_to_resume(self, platform: str, root_key: str) -> list[str]:
        return await self._read(lambda c: reads.threads_to_resume(c, platform, root_key), [])

    async def live_threads(self, platform: str, root_keys: Sequence[str]) -> list[tuple[str, str]]:
        """(id, workspace: '' for none) of each debate of `platform` whose thread may still change, oldest
        first: running, or ended while one of its `root_keys` records was not final."""
        return await self._read(lambda c: renderers.live_threads(c, platform, root_keys), [])

    async def tally(self, debate_id: str) -> Tally:
        return await self._read_one_statement(lambda c: reads.tally(c, debate_id), Tally(debate_id=debate_id))

    # -- the debate page's key (page_keys.py): made on first use; `renew` replaces it (old links 404)
    async def page_token(self, debate_id: str, *, renew: bool = False) -> str:
        return await self._write(lambda c: page_keys.page_token(c, debate_id, renew))

    async def stored_page_token(self, debate_id: str) -> str | None:
        return await self._read(lambda c: page_keys.stored_page_token(c, debate_id), None)

    async def history(
        self, limit: int = 20, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> list[DebateSummary]:
        return await self._read(lambda c: reads.history(c, limit, scope, platform, channel), [])

    async def judge_agreement(
        self, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> JudgeAgreement:
        return await self._read(lambda c: reads.judge_agreement(c, scope, platform, channel), JudgeAgreement())

    async def jury_figures(
        self, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> JuryFigures:
        """How often juries split and the team sided against them, over what `scope` sees."""
        return await self._read(lambda c: jury_figures(c, scope, platform, channel), JuryFigures())

    async def calibration(
        self, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> Calibration:
        """How often the team sided with verdicts of each confidence level, over what `scope` sees."""
        return await self._read(lambda c: calibration(c, scope, platform, channel), Calibration())

    async def search(self, query: str, limit: int = 20, scope: Scope | None = None) -> list[SearchHit]:
        """Full-text search over topics, turns and verdicts, best first, one hit per debate (search.py).
        User text is never syntax: whatever it holds is searched for, never an error."""
        if not query.strip() or limit <= 0:
            return []
        return await self._read_one_statement(lambda c: c.search(query, limit, scope), [])
