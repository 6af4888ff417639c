"""The app removed from a workspace: `app_uninstalled`, and `tokens_revoked` for the bot's token.

The workspace's tokens are deleted from the installation store at once, inside the listener (bolt's own
`AsyncTokenRevocationListeners`, before the event is answered), so the next request from that team finds no
token. Then, after the answer, its running debates are stopped and its data purged now or after
DEBATE_UNINSTALL_GRACE_DAYS (orchestrator/uninstall.py). A reinstall within the grace keeps the data
(`installed`, called by the installation store when an install is saved). One workspace on a fixed token
(SLACK_BOT_TOKEN) has no store: its data goes the same way.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.listener.async_builtins import AsyncTokenRevocationListeners
from slack_sdk.oauth.installation_store import Installation

from bots.slack.runtime import SlackRuntime

log = logging.getLogger("bots.slack")
PLATFORM = "slack"


def _workspace(context: AsyncBoltContext, body: dict[str, Any]) -> str | None:
    return context.team_id or body.get("team_id") or context.enterprise_id or body.get("enterprise_id")


async def app_uninstalled(body: dict[str, Any], context: AsyncBoltContext) -> None:
    runtime: SlackRuntime = context["runtime"]
    if context.is_enterprise_install and context.enterprise_id:  # an org-wide install: every workspace of it
        if runtime.installations is not None:
            await runtime.installations.async_delete_all(enterprise_id=context.enterprise_id, team_id=None)
        await _org_removed(runtime, context.enterprise_id, "app_uninstalled")
        return
    if runtime.installations is not None:
        await AsyncTokenRevocationListeners(runtime.installations).handle_app_uninstalled_events(context)
    _removed(runtime, _workspace(context, body), "app_uninstalled")


async def _org_removed(runtime: SlackRuntime, org: str, why: str) -> None:
    for workspace in await runtime.core.org_workspaces(PLATFORM, org):
        _removed(runtime, workspace, f"{why} (org-wide, {org})")


async def tokens_revoked(event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
    """A revoked user token is forgotten; a revoked bot token is the app's removal (it can do nothing more)."""
    runtime: SlackRuntime = context["runtime"]
    if runtime.installations is not None:
        await AsyncTokenRevocationListeners(runtime.installations).handle_tokens_revoked_events(event, context)
    if (event.get("tokens") or {}).get("bot"):
        org_wide = bool(context.is_enterprise_install and context.enterprise_id)
        if runtime.installations is not None:  # the installation's row holds the bot token too
            await runtime.installations.async_delete_all(enterprise_id=context.enterprise_id,
                                                         team_id=None if org_wide else context.team_id)
        if org_wide and context.enterprise_id:
            await _org_removed(runtime, context.enterprise_id, "tokens_revoked")
        else:
            _removed(runtime, _workspace(context, body), "tokens_revoked")


def _removed(runtime: SlackRuntime, workspace: str | None, why: str) -> None:
    if workspace is None:
        log.warning("slack: %s without a team or enterprise id; nothing to purge", why)
        return
    stop = runtime.tailer.stop if runtime.tailer is not None else None
    runtime.spawn(runtime.core.workspace_removed(PLATFORM, workspace, stop=stop, detail=why), f"removed-{workspace}")


async def installed(runtime: SlackRuntime, installation: Installation) -> None:
    """An install saved (OAuth): a purge waiting for this workspace (for an org-wide one: each of the org's
    workspaces seen) is dropped, and the audit trail says so."""
    try:
        if installation.is_enterprise_install and installation.enterprise_id:
            for workspace in await runtime.core.org_workspaces(PLATFORM, installation.enterprise_id):
                await runtime.core.workspace_added(PLATFORM, workspace, by=installation.user_id)
        elif installation.team_id is not None:
            await runtime.core.workspace_added(PLATFORM, installation.team_id, by=installation.user_id)
    except Exception:  # the install itself stands; the log is tried again at the next install
        log.warning("slack: could not record the install of %s", workspace, exc_info=True)
