"""The audit trail: who changed what, for the operators and a security review (`debate audit`).

One row per admin action: when, the actor (a platform and its user id, or `cli` for the operator on the
host), what they did (`AuditAction`), its target (a channel, a debate id, a workspace) and a short detail
(settings' keys and values, counts, a reason). Never a topic or any message text: the detail is written
by the code from what it did, not copied from user text. Kept for DEBATE_AUDIT_RETENTION_DAYS whatever
the debates' retention (`prune_audit`, run by the retention pass). Written once over both databases.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.log.dialect import Conn
from orchestrator.models import now
from orchestrator.safety import scrub_user_text

AuditAction = Literal["config", "stop", "link_revoke", "purge", "budget", "install", "uninstall"]
DETAIL_CHARS = 200


class Actor(BaseModel):
    """Who acts: a platform's user in a workspace, the platform itself (`user` None: an uninstall), or the
    operator on the host (the default, `cli`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    platform: str = "cli"
    workspace: str | None = None
    user: str | None = None

    def entry(self, action: AuditAction, target: str = "", detail: str = "", at: float | None = None) -> AuditEntry:
        return AuditEntry(at=now() if at is None else at, platform=self.platform, workspace=self.workspace,
                          actor=self.user, action=action, target=target, detail=detail)


OPERATOR = Actor()


class AuditEntry(BaseModel):
    """One admin action. `platform` "cli" (and no `actor`) is the operator on the host."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: float = Field(default_factory=now)
    platform: str = "cli"
    workspace: str | None = None
    actor: str | None = None  # the platform's user id; None: the operator, or the platform itself (uninstall)
    action: AuditAction
    target: str = ""
    detail: str = ""

    @field_validator("target", "detail")
    @classmethod
    def _short(cls, value: str) -> str:
        value = " ".join(scrub_user_text(value).split())
        return value if len(value) <= DETAIL_CHARS else value[: DETAIL_CHARS - 1] + "…"

    @property
    def who(self) -> str:
        """The actor as one word: `cli`, `slack:U123`, `discord:456`, or `slack` for the platform itself."""
        if self.actor is None:
            return self.platform
        return f"{self.platform}:{self.actor}"


async def send_audit(c: Conn, entry: AuditEntry) -> None:
    await c.send_insert("audit", entry.model_dump() | {"at": c.time(entry.at)})


async def audit_entries(c: Conn, since: float, limit: int) -> list[AuditEntry]:
    """Newest first."""
    found = await c.rows("select at, platform, workspace, actor, action, target, detail from audit where at >= :since"
                         " order by at desc, id desc limit :limit", {"since": c.time(since), "limit": limit})
    return [AuditEntry.model_validate(r | {"at": c.epoch(r["at"]) or 0.0}) for r in found]


async def prune_audit(c: Conn, before: float) -> int:
    """Delete the entries older than `before`; how many went."""
    return len(await c.values("delete from audit where at < :before returning 1", {"before": c.time(before)}))


async def last_detail(c: Conn, action: AuditAction) -> str | None:
    """The detail of the newest entry of `action`, or None."""
    found = await c.one("select detail from audit where action = :action order by at desc, id desc limit 1",
                        {"action": action})
    return None if found is None else str(found)
