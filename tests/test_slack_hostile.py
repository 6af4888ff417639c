"""Signed but malformed requests: Slack sends odd payloads in real life (new surfaces, workflow steps,
clicks from a modal or App Home). Each gets a 200 that does nothing or a 400, never a 500, and never a
traceback in the log; the bot stays healthy. Through our HTTP route and bolt's real dispatch."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlencode

import aiohttp
import pytest

from bots.slack.blocks import CONTINUE_ACTION, INTERJECT_ACTION, QUOTE_ACTION, VOTE_ACTION
from bots.slack.modals import CONTINUE_VIEW, INTERJECT_VIEW
from bots.slack.surface import slack_limits
from tests.cli_harness import clean_env
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import (
    SIGNING_SECRET,
    SlackAPIPeer,
    SlackBot,
    interactive_body,
    sign,
    slack_settings,
    slash_body,
)
from tests.llm_scripts import script_judge
from tests.serve_harness import free_port, health_until

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

RESPONSE_URL = "http://127.0.0.1:9/response/none"  # the peer's, once it runs (see `against`)
USER, TEAM, CHANNEL = {"id": "U1", "team_id": "T1"}, {"id": "T1", "domain": "peer"}, {"id": "C1", "name": "general"}
MESSAGE = {"type": "message", "ts": "1700000000.000100", "text": "x", "blocks": []}


def click(action_id: str, value: Any = "abc1234|agree", **drop_or_set: Any) -> dict[str, Any]:
    """A block_actions payload for one of our buttons; a key set to ... is left out."""
    payload: dict[str, Any] = {
        "type": "block_actions", "team": TEAM, "user": USER, "api_app_id": "A1", "token": "legacy",
        "trigger_id": "trig-1", "channel": CHANNEL, "response_url": RESPONSE_URL,
        "container": {"type": "message", "message_ts": MESSAGE["ts"], "channel_id": "C1"}, "message": MESSAGE,
        "actions": [{"type": "button", "action_id": action_id, "block_id": "b", "value": value, "action_ts": "1"}],
    }
    return {k: v for k, v in {**payload, **drop_or_set}.items() if v is not ...}


def submission(callback_id: str, **drop_or_set: Any) -> dict[str, Any]:
    view = {"id": "V1", "type": "modal", "callback_id": callback_id, "team_id": "T1",
            "private_metadata": json.dumps({"debate": "abc1234", "channel": "C1"}), "blocks": [],
            "state": {"values": {}}, "hash": "h", "app_id": "A1"}
    payload: dict[str, Any] = {"type": "view_submission", "team": TEAM, "user": USER, "api_app_id": "A1",
                               "token": "legacy", "trigger_id": "trig-2", "view": view}
    return {k: v for k, v in {**payload, **drop_or_set}.items() if v is not ...}


def shortcut(**drop_or_set: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"type": "message_action", "callback_id": QUOTE_ACTION, "team": TEAM, "user": USER,
                               "channel": CHANNEL, "api_app_id": "A1", "token": "legacy", "trigger_id": "trig-3",
                               "response_url": RESPONSE_URL, "message_ts": MESSAGE["ts"],
                               "message": MESSAGE}
    return {k: v for k, v in {**payload, **drop_or_set}.items() if v is not ...}


def event(inner: Any, **outer: Any) -> str:
    return json.dumps({"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": "Ev1",
                       "event_time": 1, "event": inner, **outer})


def form(**fields: str) -> str:
    return urlencode(fields)




def slash_without(*names: str, **changed: str) -> str:
    fields = dict(parse_qsl(slash_body("help", response_url=RESPONSE_URL)))
    return urlencode({**{k: v for k, v in fields.items() if k not in names}, **changed})


def against(peer: SlackAPIPeer, body: str) -> str:
    """`body` with its response_url pointed at the peer."""
    return body.replace(quote_plus(RESPONSE_URL), quote_plus(peer.response_url()))


VOTE = f"{VOTE_ACTION}_agree"
HOSTILE: dict[str, str] = {
    # interactivity: `payload=` JSON
    "payload missing type": interactive_body({"user": USER, "team": TEAM}),
    "payload unknown type": interactive_body({"type": "workflow_step_edit", "user": USER, "team": TEAM}),
    "payload type not a string": interactive_body({"type": 5, "user": USER}),
    "payload is a list": urlencode({"payload": "[1, 2]"}),
    "payload is null": urlencode({"payload": "null"}),
    "payload not JSON": urlencode({"payload": "{not json"}),
    "actions list empty": interactive_body(click(VOTE, actions=[])),
    "actions not a list": interactive_body(click(VOTE, actions="vote")),
    "action without value": interactive_body(click(VOTE, actions=[{"action_id": VOTE, "type": "button"}])),
    "vote without user": interactive_body(click(VOTE, user=...)),
    "vote without channel": interactive_body(click(VOTE, channel=...)),
    "vote without message": interactive_body(click(VOTE, message=...)),
    "vote from a modal": interactive_body(click(VOTE, channel=..., message=..., container={"type": "view"})),
    "vote with value not a string": interactive_body(click(VOTE, value={"x": 1})),
    "quote without channel": interactive_body(click(QUOTE_ACTION, value="abc1234", channel=...)),
    "quote without user": interactive_body(click(QUOTE_ACTION, value="abc1234", user=...)),
    "quote without value": interactive_body(click(QUOTE_ACTION, actions=[{"action_id": QUOTE_ACTION}])),
    "interject without channel": interactive_body(click(INTERJECT_ACTION, value="abc1234", channel=...)),
    "interject without trigger": interactive_body(click(INTERJECT_ACTION, value="abc1234", trigger_id=...)),
    "continue without user": interactive_body(click(CONTINUE_ACTION, value="abc1234", user=...)),
    "shortcut without channel": interactive_body(shortcut(channel=...)),
    "shortcut without user": interactive_body(shortcut(user=...)),
    "shortcut without message": interactive_body(shortcut(message=...)),
    "global shortcut of ours": interactive_body(shortcut(type="shortcut", channel=..., message=..., message_ts=...)),
    "view without state": interactive_body(submission(INTERJECT_VIEW, view={"callback_id": INTERJECT_VIEW})),
    "view without user": interactive_body(submission(CONTINUE_VIEW, user=...)),
    "view metadata not JSON": interactive_body(submission(INTERJECT_VIEW, view={
        "callback_id": INTERJECT_VIEW, "private_metadata": "{nope", "state": {"values": {}}})),
    "view metadata a list": interactive_body(submission(CONTINUE_VIEW, view={
        "callback_id": CONTINUE_VIEW, "private_metadata": "[]", "state": {"values": {}}})),
    "view state values a list": interactive_body(submission(INTERJECT_VIEW, view={
        "callback_id": INTERJECT_VIEW, "private_metadata": "{}", "state": {"values": []}})),
    "view not an object": interactive_body(submission(INTERJECT_VIEW, view="V1")),
    "view closed": interactive_body({"type": "view_closed", "user": USER, "view": {"callback_id": INTERJECT_VIEW}}),
    "block suggestion": interactive_body({"type": "block_suggestion", "user": USER, "action_id": "x", "value": ""}),
    # slash commands
    "command without user": slash_without("user_id"),
    "command without channel": slash_without("channel_id"),
    "command without text": slash_without("text"),
    "command without team": slash_without("team_id"),
    "command without trigger": slash_without("trigger_id", "response_url"),
    "another command": slash_without(command="/other"),
    "empty form": form(),
    # events
    "event without event": json.dumps({"type": "event_callback", "team_id": "T1"}),
    "event not an object": event("app_home_opened"),
    "home opened without user": event({"type": "app_home_opened", "tab": "home"}),
    "home opened, tab not a string": event({"type": "app_home_opened", "user": "U1", "tab": 3}),
    "unknown event": event({"type": "workflow_step_execute", "user": "U1"}),
    "event type missing": event({"user": "U1"}),
    "url verification without challenge": json.dumps({"type": "url_verification"}),
    "JSON list": json.dumps([1, 2]),
    "JSON string": json.dumps("event"),
    "no type at all": json.dumps({"team_id": "T1"}),
}


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        yield p


@pytest.fixture
async def bot(tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer) -> AsyncIterator[SlackBot]:
    script_judge(llm_server)
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url)
    async with SlackBot(settings, slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05)) as b:
        yield b


def tracebacks(records: list[logging.LogRecord]) -> list[str]:
    return [f"{r.name}: {r.getMessage()} {r.exc_info[1]!r}" if r.exc_info else f"{r.name}: {r.getMessage()}"
            for r in records if r.exc_info or r.levelno >= logging.ERROR]


async def test_every_hostile_request_is_a_200_or_a_400_and_no_traceback(
    bot: SlackBot, peer: SlackAPIPeer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    answers: dict[str, int] = {}
    for name, body in HOSTILE.items():
        status, _ = await bot.post(against(peer, body))
        await bot.settle()
        answers[name] = status
    wrong = {name: status for name, status in answers.items() if status not in (200, 400)}
    assert not wrong, json.dumps(wrong)
    assert not tracebacks(caplog.records), "\n".join(tracebacks(caplog.records))
    async with bot.http.get(f"{bot.url}/healthz") as response:
        assert response.status == 200
    status, _ = await bot.command("help", peer)  # still answering
    await bot.settle()
    assert status == 200 and peer.of("response_url")


async def test_serve_and_worker_take_every_hostile_request_without_a_traceback(tmp_path: Path) -> None:
    """The same table against a real `debate serve --front-only` (Slack HTTP mode) and a `debate worker`
    beside it: every answer 200 or 400, both stay healthy, neither prints a traceback."""
    front_port, worker_port = free_port(), free_port()
    async with FakeLLMServer() as llm, SlackAPIPeer() as peer:
        env = clean_env(tmp_path, OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=llm.openai_base_url,
                        ANTHROPIC_API_KEY="sk-ant-test-key-123456", ANTHROPIC_BASE_URL=llm.anthropic_base_url,
                        SLACK_BOT_TOKEN="xoxb-test-token", SLACK_SIGNING_SECRET=SIGNING_SECRET,
                        SLACK_API_BASE_URL=peer.base_url)
        procs = [await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.cli", *args, cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            for args in (("serve", "--front-only", "--host", "127.0.0.1", "--port", str(front_port)),
                         ("worker", "--name", "w1", "--host", "127.0.0.1", "--port", str(worker_port)))]
        front, worker = procs
        try:
            await health_until(f"http://127.0.0.1:{front_port}/healthz", front, 200)
            await health_until(f"http://127.0.0.1:{worker_port}/healthz", worker, 200)
            answers: dict[str, int] = {}
            async with aiohttp.ClientSession() as http:
                for name, body in HOSTILE.items():
                    sent = against(peer, body)
                    headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SIGNING_SECRET, sent)}
                    async with http.post(f"http://127.0.0.1:{front_port}/slack/events", data=sent.encode(),
                                         headers=headers) as response:
                        answers[name] = response.status
                help_body = slash_body("help", response_url=peer.response_url())
                async with http.post(f"http://127.0.0.1:{front_port}/slack/events", data=help_body.encode(),
                                     headers={"Content-Type": "application/x-www-form-urlencoded",
                                              **sign(SIGNING_SECRET, help_body)}) as response:
                    assert response.status == 200
            await peer.wait_for(lambda p: p.of("response_url"), within=30)  # still answering
            for port, proc in ((front_port, front), (worker_port, worker)):
                assert (await health_until(f"http://127.0.0.1:{port}/healthz", proc, 200))["ok"] is True
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
            outputs = [await asyncio.wait_for(proc.communicate(), 60) for proc in procs]
    assert {name: status for name, status in answers.items() if status not in (200, 400)} == {}
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0 and "Traceback" not in err.decode(), err.decode()[-3000:]
