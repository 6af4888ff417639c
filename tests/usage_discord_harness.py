"""What test_usage_discord.py shares with other test modules, moved here so that no test module imports another:
`spend`."""

from __future__ import annotations

import time

from orchestrator.budgets import CallUsage
from orchestrator.log import DebateLog
from orchestrator.models import DebateSpec, Outcome, Seat, Turn
from tests.fakes.discord_api import GUILD_ID

SEATS = (Seat(label="A", role="proposer", model="openai:gpt-5"),
         Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-5"))


async def spend(store: DebateLog, user: str, turn_tokens: int, judge_tokens: int, *, platform: str = "discord",
                workspace: str = GUILD_ID) -> None:
    """A finished debate of `user`: one gpt-5 turn and one judge pass, their output tokens as given."""
    s = DebateSpec(topic="Tabs or spaces?", seats=SEATS, judge="openai:gpt-5", platform=platform,
                   workspace=workspace, channel="730000000000000001", requested_by=user)
    await store.create_debate(s)
    await store.add_turn(Turn(debate_id=s.id, round=1, seat="A", role="proposer", kind="opening",
                              model="openai:gpt-5", output_tokens=turn_tokens, input_tokens=1000))
    await store.add_call(CallUsage(attempt=s.id + "-judge", debate_id=s.id, at=time.time(), purpose="judge",
                                   model="openai:gpt-5", input_tokens=2000, output_tokens=judge_tokens))
    await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=1))
