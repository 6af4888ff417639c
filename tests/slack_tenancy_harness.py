"""What test_slack_tenancy.py shares with other test modules, moved here so that no test module imports another:
`open_home`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bots.slack.surface import slack_limits
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import is_judge, script_judge, verdict_json

LIMITS = slack_limits(post_interval=0.01, updates=1000, window=1.0, edit_interval=0.05)


SECRET_RECOMMENDATION = "Sign the Initech term sheet before Friday (SECRETREC)."


SECRET_TURN = "CONFIDENTIALTURN: the Initech numbers say yes."


def about_initech(record: RequestRecord) -> bool:
    return "Initech" in record.prompt_text


def script(llm: FakeLLMServer) -> None:
    llm.add_rule(Reply(text=verdict_json("A", recommendation=SECRET_RECOMMENDATION)),
                 match=lambda r: is_judge(r) and about_initech(r))
    script_judge(llm, "A", recommendation="Use Kafka for the audit log.")
    llm.add_rule(Reply(text=SECRET_TURN), match=about_initech)


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        p.declare_channel("G2", "private")
        p.declare_channel("D7", "im")
        yield p


@pytest.fixture
async def bot(tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer) -> AsyncIterator[SlackBot]:
    script(llm_server)
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url)
    async with SlackBot(settings, LIMITS) as b:
        yield b


_keys = iter(range(1_000_000))


def home_event(user: str, team: str = "T1") -> str:
    return json.dumps({"token": "legacy", "team_id": team, "api_app_id": "A1", "type": "event_callback",
                       "event_id": f"Ev{next(_keys)}", "event_time": 1,
                       "event": {"type": "app_home_opened", "user": user, "channel": "D1", "tab": "home"}})


async def open_home(bot: SlackBot, user: str, team: str = "T1") -> None:
    status, _ = await bot.post(home_event(user, team), headers={"Content-Type": "application/json"})
    assert status == 200
