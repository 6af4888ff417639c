"""The application interface the adapters call: what a platform or the CLI asks of the core, by use.

`Core` (orchestrator/app.py) carries these operations, so `bots/` never reaches into the log
(`core.store`): a read from chat passes the asker's `Scope`, applied inside the log's query; `None` is
the operator on the host. The thread renderer (`bots.thread`) is the log sink's partner and writes
message ids through the log it is handed; everything else a surface needs is here.
"""

from __future__ import annotations

from orchestrator.brief.models import Brief
from orchestrator.budgets import SpentCall
from orchestrator.log import (
    DebateLog,
    DebateRecord,
    DebateSummary,
    JudgeAgreement,
    MessageRecord,
    Scope,
    SearchHit,
    Tally,
)
from orchestrator.log.audit import Actor, AuditEntry
from orchestrator.log.calibration import Calibration
from orchestrator.log.jury import JuryFigures
from orchestrator.models import ChannelDefaults, DebateSpec, Interjection, Outcome, Vote
from orchestrator.quotas import Quota


class Operations:
    """Mixed into `Core`, whose `store` is the log."""

    store: DebateLog

    # -- requests and starts
    async def claim_request(self, key: str) -> bool:
        """True the first time any process sees the platform request `key` (for a day); False on a repeat."""
        return await self.store.claim_request(key)

    async def record_start(self, spec: DebateSpec) -> None:
        """The admitted debate with its thread: in the log before a worker or a restarted front needs it."""
        await self.store.create_debate(spec)

    async def begin_continuation(self, debate_id: str, *, quota: Quota, requested_by: str | None,
                                 facts: Interjection | None) -> int:
        return await self.store.begin_continuation(debate_id, quota=quota, facts=facts, requested_by=requested_by)

    async def add_sources(self, debate_id: str, brief: Brief) -> None:
        """Sources a continuation adds to a debate's brief, numbered after those it has."""
        await self.store.add_sources(debate_id, brief)

    async def fail(self, debate_id: str, outcome: Outcome) -> None:
        """End a debate that cannot go on (`outcome.status` failed), its counts kept."""
        await self.store.finish_debate(debate_id, outcome)

    # -- organizations (Slack Enterprise Grid): an org-wide install serves each of its workspaces apart
    async def note_org(self, platform: str, workspace: str, org: str) -> None:
        await self.store.note_org(platform, workspace, org)

    async def org_of(self, platform: str, workspace: str) -> str | None:
        return await self.store.org_of(platform, workspace)

    async def org_workspaces(self, platform: str, org: str) -> list[str]:
        return await self.store.org_workspaces(platform, org)

    # -- the audit trail (orchestrator/log/audit.py): who changed what
    async def record_audit(self, entry: AuditEntry) -> None:
        await self.store.add_audit(entry)

    async def stopped_by(self, record: DebateRecord, actor: Actor) -> None:
        """A stop of someone else's debate (an admin's) goes to the audit trail; one's own does not."""
        if actor.user is None or actor.user != record.requested_by:
            await self.store.add_audit(actor.entry("stop", record.id, f"started by {record.requested_by or 'cli'}"))

    # -- the debate page's key (orchestrator/log/page_keys.py): made on first use; `renew`: old links 404
    async def page_token(self, debate_id: str, *, renew: bool = False) -> str:
        return await self.store.page_token(debate_id, renew=renew)

    async def stored_page_token(self, debate_id: str) -> str | None:
        return await self.store.stored_page_token(debate_id)

    # -- reads, each scoped to what the asker may see
    async def debate(self, id_or_prefix: str, scope: Scope | None = None, *, turns: bool = True
                     ) -> DebateRecord | None:
        """The debate `id_or_prefix` names, if visible in `scope`; raises AmbiguousIdError on a short prefix."""
        return await self.store.get_debate(id_or_prefix, scope, turns=turns)

    async def debate_status(self, debate_id: str) -> str | None:
        """The status of the debate with this full id (`running`, `completed`, …), None if unknown: one column."""
        return await self.store.debate_status(debate_id)

    async def purged(self, debate_id: str) -> dict[str, object] | None:
        """The tombstone of a purged debate (its full id): id, purged_at, reason; None if it was not purged."""
        return await self.store.purged(debate_id)

    async def spent_calls(self, since: float) -> list[SpentCall]:
        """Every model call logged since `since`, with whom it counts for (budgets, `debate usage`)."""
        return await self.store.spent_calls(since)

    async def history(self, limit: int, scope: Scope | None = None, *, channel: str | None = None
                      ) -> list[DebateSummary]:
        return await self.store.history(limit, scope, channel=channel)

    async def search(self, query: str, limit: int, scope: Scope | None = None) -> list[SearchHit]:
        return await self.store.search(query, limit, scope)

    async def judge_agreement(self, scope: Scope | None = None) -> JudgeAgreement:
        return await self.store.judge_agreement(scope)

    async def jury_figures(self, scope: Scope | None = None) -> JuryFigures:
        return await self.store.jury_figures(scope)

    async def calibration(self, scope: Scope | None = None) -> Calibration:
        return await self.store.calibration(scope)

    async def debate_of_message(self, platform: str, channel: str, message_id: str, scope: Scope | None = None
                                ) -> str | None:
        """The id of the debate that posted `message_id` (its root or any message of its thread)."""
        return await self.store.find_by_message(platform, channel, message_id, scope)

    async def messages(self, debate_id: str) -> dict[str, MessageRecord]:
        return await self.store.messages(debate_id)

    async def tally(self, debate_id: str) -> Tally:
        return await self.store.tally(debate_id)

    # -- what the audience writes
    async def record_vote(self, vote: Vote, scope: Scope | None) -> Tally:
        """Raises DebateNotFoundError when the debate is not visible in `scope`."""
        return await self.store.record_vote(vote, scope)

    async def add_interjection(self, note: Interjection, *, max_waiting: int) -> int:
        return await self.store.add_interjection(note, max_waiting=max_waiting)

    async def channel_defaults(self, platform: str, workspace: str | None, channel: str) -> ChannelDefaults:
        return await self.store.channel_defaults(platform, workspace, channel)

    async def set_channel_defaults(self, platform: str, workspace: str | None, channel: str,
                                   defaults: ChannelDefaults, *, by: str | None) -> None:
        await self.store.set_channel_defaults(platform, workspace, channel, defaults, by=by)

    async def show_message(self, debate_id: str, key: str, platform: str, channel: str | None, message_id: str, *,
                           final: bool) -> None:
        """Record the platform message `message_id` under `key` (`final`: it shows its last text)."""
        await self.store.set_message(debate_id, key, platform, channel, message_id, final=final)
