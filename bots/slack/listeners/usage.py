"""`/debate usage`: an admin sees the workspace's spend this day and month against its budgets, anyone
else their own (bots/usage.py); the App Home shows admins the same (home.py)."""

from __future__ import annotations

from bots.slack.listeners.invocation import Invocation
from bots.usage import usage_lines


async def show_usage(inv: Invocation) -> None:
    admin = await inv.runtime.users.is_admin(inv.client, inv.team_id, inv.user_id)
    lines = await usage_lines(inv.runtime.core, "slack", inv.team_id, inv.user_id, admin=admin)
    title = "*This workspace's model spend*" if admin else "*Your model spend*"
    await inv.tell("\n".join([title, *(f"• {line}" for line in lines)]))
