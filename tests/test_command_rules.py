"""One set of rules for starting a debate (issue 9, "one rule, three checks").

Slack's text grammar, Discord's typed options and the CLI's argparse values all go through
`bots.commands.start_request`: the same bad value gets the same message on every surface (on the CLI,
exit status 2 and that message on one line), checked here through the real bolt dispatch, the real
discord.py client and a real `debate` subprocess.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bots.commands import CommandError, StartDebate, parse_command, start_request
from bots.settings import load_settings
from bots.slack.surface import slack_limits
from orchestrator.app import Core
from orchestrator.models import MAX_COUNCIL, MAX_DEBATERS, MAX_ROUNDS, MAX_TOPIC_CHARS
from tests.cli_harness import clean_env, debate
from tests.discord_harness import connected
from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings

LIMITS = slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05)


def _message(**request: object) -> str:
    with pytest.raises(CommandError) as caught:
        start_request(**request)  # type: ignore[arg-type]
    return str(caught.value)


@pytest.mark.parametrize(("request_", "needle"), [
    ({"topic": "   "}, "The topic is empty"),
    ({"topic": "x" * (MAX_TOPIC_CHARS + 1)}, f"the limit is {MAX_TOPIC_CHARS:,}"),
    ({"topic": "T", "rounds": "0"}, f"from 1 to {MAX_ROUNDS}"),
    ({"topic": "T", "rounds": MAX_ROUNDS + 1}, f"from 1 to {MAX_ROUNDS}"),
    ({"topic": "T", "rounds": "two"}, "whole number"),
    ({"topic": "T", "rounds": "²"}, "whole number"),  # isdigit() is true for it, int() is not
    ({"topic": "T", "rounds": "9" * 5000}, "whole number"),  # int() of that many digits raises
    ({"topic": "T", "format": "duel"}, "Unknown format `duel`"),
    ({"topic": "T", "effort": "extreme"}, "Unknown effort `extreme`"),
    ({"topic": "T", "debaters": "openai:gpt-5"}, f"2 to {MAX_DEBATERS} debaters"),
    ({"topic": "T", "debaters": ",".join(["openai:gpt-5"] * (MAX_COUNCIL + 1))}, f"2 to {MAX_DEBATERS} debaters"),
    ({"topic": "T", "format": "stances", "debaters": ",".join(["openai:gpt-5"] * (MAX_DEBATERS + 1))},
     f"2 to {MAX_DEBATERS} debaters"),
    ({"topic": "T", "format": "council", "debaters": ",".join(["openai:gpt-5"] * (MAX_COUNCIL + 1))},
     f"2 to {MAX_COUNCIL} council members"),
    ({"topic": "T", "judge": "no-colon"}, "provider:model"),
    ({"topic": "T", "proposer": "bogus:model"}, "valid providers"),
])
def test_each_rule_has_one_message(request_: dict[str, object], needle: str) -> None:
    assert needle in _message(**request_)


def test_the_text_grammar_and_typed_values_give_the_same_request() -> None:
    typed = start_request("Tabs or spaces?", format="consensus", rounds=3, debaters=["openai:gpt-5", "anthropic:x"],
                          judge="openai:judge-1", effort="low")
    text = parse_command("Tabs or —rounds 3 spaces? --format consensus --vs openai:gpt-5,anthropic:x "
                         "--judge=openai:judge-1 --effort low")
    assert isinstance(text, StartDebate) and text == typed


# ---------------------------------------------------------------- the same words on every surface


@pytest.fixture
async def slack_peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as peer:
        yield peer


@pytest.fixture
async def discord_peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer() as peer:
        yield peer


@pytest.mark.slow
async def test_a_bad_request_reads_the_same_in_slack_discord_and_the_cli(
    tmp_path: Path, slack_peer: SlackAPIPeer, discord_peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    cases = [  # (Discord options, Slack text, CLI arguments)
        ({"topic": "   "}, "   --rounds 2", ["run", "   ", "--rounds", "2"]),
        ({"topic": "Tabs?", "judge": "no-colon"}, "Tabs? --judge no-colon", ["run", "Tabs?", "--judge", "no-colon"]),
    ]
    expected = [_message(**request) for request, _slack, _cli in cases]

    cli = []
    for _request, _slack, argv in cases:
        code, out, err = await debate(tmp_path, *argv, env=clean_env(tmp_path))
        assert code == 2 and out == "" and err.count("\n") == 1
        cli.append(err.removeprefix("debate: ").rstrip("\n"))

    settings = slack_settings(str(tmp_path / "s.db"), slack_peer, llm_server.openai_base_url,
                              llm_server.anthropic_base_url)
    async with SlackBot(settings, LIMITS) as bot:
        for _request, text, _cli in cases:
            await bot.command(text, slack_peer)
        await bot.settle()
    slack = [c.params["text"] for c in slack_peer.of("response_url") if c.params.get("response_type") == "ephemeral"]

    peer = discord_peer
    settings = load_settings(DEBATE_DB=str(tmp_path / "d.db"), OPENAI_API_KEY="sk-test",
                             OPENAI_BASE_URL=llm_server.openai_base_url, DISCORD_BOT_TOKEN=TOKEN,
                             DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url)
    discord = []
    async with await Core.open(settings) as core, connected(core):
        for request, _slack, _cli in cases:
            sent = await peer.dispatch_interaction(peer.slash_command("debate", request))
            await peer.wait_for(lambda sent=sent: sent.original is not None)
            reply = peer.messages[sent.original]
            assert reply["flags"] & 64
            discord.append(reply["content"])

    assert cli == slack == discord == expected
