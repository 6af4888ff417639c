"""What `/debate usage` (Slack), `/debate-usage` (Discord) and the App Home say of spend: an admin sees
the workspace's spend this day and month against its budgets (and its own share of the deployment's
month budget, never the deployment's total), anyone else their own. The numbers are the costs the log
recorded (orchestrator/usage.py). A last line says how often the team
sided with verdicts of each confidence level, over the debates the workspace's public channels see."""

from __future__ import annotations

import time

from orchestrator.app import Core
from orchestrator.budgets import month_start
from orchestrator.log.records import Scope
from orchestrator.quotas import Budget, Claim
from orchestrator.usage import standing_lines, standings


async def usage_lines(core: Core, platform: str, workspace: str | None, user: str, *, admin: bool,
                      place: str = "workspace") -> list[str]:
    """The asker's standing lines: a workspace's for an admin, their own for anyone else."""
    at = time.time()
    calls = await core.spent_calls(month_start(at))
    claim = Claim(platform=platform, workspace=workspace, user=user, channel=None)
    lines = standing_lines(standings(calls, claim, Budget.from_settings(core.settings), at, admin=admin), admin=admin,
                           place=place)
    calibration = await core.calibration(Scope(platform=platform, workspace=workspace))
    return [*lines, calibration.text()]
