"""A first word that names a subcommand is that subcommand, and a model name has a length limit, on every
surface (issue 57 items 3 and 9): through bolt's real dispatch against the Slack API peer, the real
discord.py client against the Discord peer, and the `debate` command line in a subprocess. A refusal is
one private line; nothing is admitted, logged or sent to a model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bots.commands import Usage, parse_command
from bots.grammar import CommandError
from bots.settings import load_settings
from orchestrator.app import Core
from orchestrator.config import ConfigError
from orchestrator.models import MAX_MODEL_CHARS
from tests.admission_slack_harness import LIMITS
from tests.cli_harness import debate, two_providers
from tests.discord_harness import connected
from tests.fakes.discord_api import MEMBER_PERMISSIONS, TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge
from tests.slack_team_harness import answer, ask, debated

LONG_MODEL = "openai:" + "x" * 5000
ADMIN_PERMISSIONS = str(int(MEMBER_PERMISSIONS) | 1 << 3)


def test_the_grammar_reads_a_subcommand_whatever_follows_it() -> None:
    assert parse_command("usage") == Usage()
    for text, words in (("usage last week please", "`/debate usage` takes nothing after it"),
                        ("USAGE --rounds 1", "`/debate usage` takes nothing after it"),
                        ("history of the Roman empire", "`/debate history` takes an optional count"),
                        ("models gpt", "`/debate models` takes nothing after it"),
                        ("link 3f2a9c01d4", "operator's command line (`debate link ID`)"),
                        ("export 3f2a9c01d4", "operator's command line"),
                        ("continue investing in Kafka?", "`/debate continue` takes a debate id first"),
                        ("show me the money", "`/debate show` takes one debate id")):
        with pytest.raises(CommandError, match=words.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
            parse_command(text)
    quoted = parse_command('"usage based pricing or seats?" --rounds 1')
    assert quoted.kind == "start" and "usage based pricing" in quoted.topic  # type: ignore[union-attr]


@pytest.fixture
async def slack_peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        p.declare_user("U9", "admin")
        yield p


@pytest.mark.slow
async def test_slack_answers_a_subcommand_with_words_after_it_and_starts_nothing(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    script_judge(llm_server, "A")
    peer = slack_peer
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url,
                              DEBATE_CHAT_MODELS="openai:*,anthropic:*")
    async with SlackBot(settings, LIMITS) as bot:
        for text, words in (("usage last week", "`/debate usage` takes nothing after it"),
                            ("usage based pricing or seats? --rounds 1", "`/debate usage` takes nothing after it"),
                            ("link 3f2a9c01d4", "`debate link ID`"),
                            ("history of tabs and spaces", "`/debate history` takes an optional count"),
                            ("continue investing in Kafka?", "takes a debate id first")):
            said = await answer(peer, await ask(bot, peer, text, user="U1"))
            assert words in said and len(said.splitlines()) == 1, (text, said)
        await bot.settle()
        assert await bot.core.store.history(10) == [], "no debate was admitted"
        assert llm_server.requests == [], "no model was called"
        assert not peer.of("chat.postMessage"), "nothing was posted in the channel"

        # …and a topic that starts with such a word is debated when it is quoted
        debate_id = await debated(bot, peer, '"usage based pricing or seats?" --rounds 1', user="U1")
        record = await bot.core.store.get_debate(debate_id, turns=False)
        assert record is not None and "usage based pricing" in record.spec.topic


@pytest.mark.slow
async def test_slack_refuses_a_model_name_past_the_limit_wherever_it_is_typed(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    peer = slack_peer
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url,
                              DEBATE_CHAT_MODELS="openai:*,anthropic:*")
    async with SlackBot(settings, LIMITS) as bot:
        for text, user in ((f"Tabs or spaces? --judges {LONG_MODEL},anthropic:claude-x,openai:gpt-5", "U1"),
                           (f"Tabs or spaces? --vs {LONG_MODEL},anthropic:claude-x", "U1"),
                           (f"Tabs or spaces? --judge {LONG_MODEL}", "U1"),
                           (f"config judge={LONG_MODEL}", "U9")):
            said = await answer(peer, await ask(bot, peer, text, user=user))
            assert f"a model name is at most {MAX_MODEL_CHARS}" in said and len(said) < 400, said
        await bot.settle()
        assert await bot.core.store.history(10) == [] and llm_server.requests == []
        assert (await bot.core.channel_defaults("slack", "T1", "C1")).judge is None


@pytest.fixture
async def discord_peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS) as server:
        yield server


@pytest.mark.slow
async def test_discord_answers_a_topic_that_names_a_command_and_refuses_a_long_model(
    tmp_path: Path, discord_peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    peer = discord_peer
    settings = load_settings(DEBATE_DB=str(tmp_path / "debates.db"), DISCORD_BOT_TOKEN=TOKEN,
                             DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
                             OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=llm_server.openai_base_url,
                             ANTHROPIC_API_KEY="sk-ant-test-key-123456",
                             ANTHROPIC_BASE_URL=llm_server.anthropic_base_url)
    async with await Core.open(settings) as core, connected(core):
        for options, words in (({"topic": "usage last week"}, "use `/debate-usage`"),
                               ({"topic": "link 3f2a9c01d4"}, "`debate link ID`"),
                               ({"topic": "Tabs or spaces?", "judge": LONG_MODEL},
                                f"a model name is at most {MAX_MODEL_CHARS}"),
                               ({"topic": "Tabs or spaces?", "judges": f"{LONG_MODEL},openai:gpt-5"},
                                f"a model name is at most {MAX_MODEL_CHARS}")):
            record = await peer.dispatch_interaction(peer.slash_command("debate", options))
            await peer.wait_for(lambda record=record: record.ephemeral)
            said = json.dumps(record.answers, ensure_ascii=False)
            assert words in said and len(said) < 1500, (options.get("topic"), said[:500])
        record = await peer.dispatch_interaction(peer.slash_command(
            "debate-config", {"judge": LONG_MODEL}, permissions=ADMIN_PERMISSIONS))
        await peer.wait_for(lambda: record.ephemeral)
        assert f"a model name is at most {MAX_MODEL_CHARS}" in json.dumps(record.answers)
        assert await core.store.history(10) == [] and llm_server.requests == []


@pytest.mark.slow
async def test_the_command_line_and_the_environment_refuse_a_long_model_name(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    env = two_providers(tmp_path, llm_server)
    for option in ("--judge", "--proposer", "--debaters"):
        value = f"{LONG_MODEL},openai:gpt-5" if option == "--debaters" else LONG_MODEL
        code, out, err = await debate(tmp_path, "run", "Tabs or spaces?", option, value, env=env)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (option, err[:300])
        assert f"a model name is at most {MAX_MODEL_CHARS}" in err and len(err) < 400, err[:300]
    code, _, err = await debate(tmp_path, "run", "Tabs or spaces?", env=env | {"DEBATE_JUDGE": LONG_MODEL})
    assert code == 2 and err.startswith("debate: DEBATE_JUDGE:") and len(err) < 400, err[:300]
    for variable in ("DEBATE_PROPOSER", "DEBATE_JUDGES", "DEBATE_CHAT_MODELS"):
        with pytest.raises(ConfigError, match=f"^{variable}: a model name is at most {MAX_MODEL_CHARS}"):
            load_settings(_env_file=None, **{variable: f"openai:gpt-5,{LONG_MODEL}"})
    assert llm_server.requests == []
