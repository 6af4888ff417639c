"""The team in the loop's shared rules (bots/loop.py, bots/grammar.py), the same for Slack, Discord and
the CLI, against a real SQLite log: every refusal is one sentence for the user, channel settings are
held to the operator's chat policy, and a channel's defaults seat the next debate started there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bots.commands import (
    HELP_TEXT,
    CommandError,
    Config,
    Continue,
    Interject,
    Rematch,
    StartDebate,
    chat_spec,
    parse_command,
)
from bots.loop import (
    Asker,
    channel_config,
    config_text,
    interject,
    parse_config,
    prepare_continuation,
    rematch_request,
    set_channel_config,
)
from orchestrator.app import Core
from orchestrator.config import Settings
from orchestrator.debate.engine import Engine
from orchestrator.log import Scope, Store
from orchestrator.models import (
    MAX_CONTINUATIONS,
    MAX_INTERJECTION_CHARS,
    MAX_INTERJECTIONS_PER_ROUND,
    ChannelDefaults,
    DebateSpec,
    Outcome,
    Seat,
    Verdict,
)
from orchestrator.providers import ProviderRegistry

WORKSPACE, CHANNEL, OTHER = "T1", "C1", "C2"
ASKER = Asker(platform="slack", user="U1", author="Dana",
              scope=Scope(platform="slack", workspace=WORKSPACE, channel=CHANNEL))
ELSEWHERE = Asker(platform="slack", user="U9", author="Eve", scope=Scope(platform="slack", workspace="T9",
                                                                         channel="C9"))
CLAUDE, GPT = "anthropic:claude-sonnet-4-6", "openai:gpt-5"


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[Core]:
    settings = Settings(_env_file=None, OPENAI_API_KEY="sk-test-secret-0123456789",  # type: ignore[call-arg]
                        ANTHROPIC_API_KEY="sk-ant-test-0123456789", DEBATE_DB=str(tmp_path / "log.db"),
                        DEBATE_CHAT_MODELS=f"{GPT},openai:gpt-5-mini,{CLAUDE}", DEBATE_CHAT_MAX_ROUNDS=3,
                        DEBATE_CHAT_MAX_EFFORT="medium")
    registry = ProviderRegistry(settings)
    async with Store(tmp_path / "log.db") as store:
        yield Core(settings=settings, store=store, registry=registry, engine=Engine(registry, settings))
    await registry.aclose()


def spec_in(channel: str = CHANNEL) -> DebateSpec:
    return DebateSpec(topic="Should we shard the ledger?", rounds=2, judge="openai:gpt-5-mini", platform="slack",
                      workspace=WORKSPACE, channel=channel,
                      seats=(Seat(label="A", role="proposer", model=GPT), Seat(label="B", role="challenger",
                                                                               model=CLAUDE)))


async def running(core: Core, channel: str = CHANNEL) -> DebateSpec:
    spec = spec_in(channel)
    await core.store.create_debate(spec)
    return spec


async def completed(core: Core) -> DebateSpec:
    spec = await running(core)
    await core.store.set_verdict(spec.id, Verdict(winner="A", reasoning="Numbers.", recommendation="Shard it."))
    await core.store.finish_debate(spec.id, Outcome(status="completed", rounds_completed=2, rounds_planned=2))
    return spec


async def refused(call: object) -> str:
    with pytest.raises(CommandError) as caught:
        await call  # type: ignore[misc]
    message = str(caught.value)
    assert message and "\n" not in message and message.count(". ") <= 1, message  # one sentence
    return message


# -- the grammar --------------------------------------------------------------------------------------


def test_the_grammar_reads_the_team_commands() -> None:
    assert parse_command("interject 3f2a9c01d4 The p99 --budget is 50 ms") == Interject(
        debate_id="3f2a9c01d4", text="The p99 --budget is 50 ms")  # a note keeps its words, dashes too
    assert parse_command("continue 3F2A9C01D4") == Continue(debate_id="3f2a9c01d4")
    assert parse_command("continue 3f2a9c01d4 the vendor doubled its price") == Continue(
        debate_id="3f2a9c01d4", facts="the vendor doubled its price")
    assert parse_command("rematch 3f2a9c01d4 --vs openai:gpt-5,anthropic:claude-x —format stances") == Rematch(
        debate_id="3f2a9c01d4", vs="openai:gpt-5,anthropic:claude-x", format="stances")
    assert parse_command("config") == Config()
    assert parse_command("config rounds=3 judge= interjections=OFF") == Config(
        assignments={"rounds": "3", "judge": "", "interjections": "OFF"})
    # a first word that names the command is the command (issue 57); the topic is quoted to be debated
    with pytest.raises(CommandError, match="takes a debate id first"):
        parse_command("continue investing in Kafka?")
    assert isinstance(parse_command("“continue investing in Kafka?”"), StartDebate)
    for text, words in (("interject 3f2a9c01d4", "Add your note"), ("interject", "takes a debate id"),
                        ("rematch 3f2a9c01d4 --rounds 2", "Unknown option"), ("rematch", "takes one debate id"),
                        ("config rounds", "key=value"), ("config colour=red", "Unknown setting")):
        with pytest.raises(CommandError, match=words):
            parse_command(text)
    assert parse_config(["format=stances", "format=challenge"]) == {"format": "challenge"}  # the last one wins
    assert all(f"/debate {name}" in HELP_TEXT for name in ("interject", "continue", "rematch", "config"))


# -- interject ----------------------------------------------------------------------------------------


async def test_an_interjection_waits_for_the_next_round_of_a_running_debate(core: Core) -> None:
    spec = await running(core)
    note = await interject(core, spec.id[:6], "  The ledger has 40 M rows.  ", ASKER)
    assert (note.debate_id, note.text, note.author, note.user, note.kind, note.round) == (
        spec.id, "The ledger has 40 M rows.", "Dana", "U1", "interjection", None)
    assert [n.id for n in await core.store.interjections(spec.id)] == [note.id]


async def test_an_interjection_is_refused_with_one_clear_sentence(core: Core) -> None:
    spec = await running(core)
    assert "No debate matches" in await refused(interject(core, spec.id, "hi", ELSEWHERE))  # not visible there
    assert "empty" in await refused(interject(core, spec.id, " \n ", ASKER))
    too_long = "x" * (MAX_INTERJECTION_CHARS + 1)
    assert f"the limit is {MAX_INTERJECTION_CHARS}" in await refused(interject(core, spec.id, too_long, ASKER))
    for i in range(MAX_INTERJECTIONS_PER_ROUND):
        await interject(core, spec.id, f"note {i}", ASKER)
    assert "already wait" in await refused(interject(core, spec.id, "one more", ASKER))
    assert len(await core.store.interjections(spec.id)) == MAX_INTERJECTIONS_PER_ROUND

    done = await completed(core)
    assert "is completed; audience notes reach only a debate in progress" in await refused(
        interject(core, done.id, "late", ASKER))

    quiet = await running(core, OTHER)
    await set_channel_config(core, "slack", WORKSPACE, OTHER, {"interjections": "off"}, by="U1")
    assert "turned off" in await refused(interject(core, quiet.id, "hello", ASKER))
    await set_channel_config(core, "slack", WORKSPACE, OTHER, {"interjections": "on"}, by="U1")
    assert (await interject(core, quiet.id, "hello", ASKER)).text == "hello"


# -- continue -----------------------------------------------------------------------------------------


async def test_a_continuation_begins_only_after_a_verdict_and_carries_its_facts(core: Core) -> None:
    live = await running(core)
    assert "still running" in await refused(prepare_continuation(core, live.id, None, ASKER))
    failed = await running(core)
    await core.store.finish_debate(failed.id, Outcome(status="failed", error="boom"))
    assert "without a verdict" in await refused(prepare_continuation(core, failed.id, None, ASKER))

    spec = await completed(core)
    record, segment = await prepare_continuation(core, spec.id, "The vendor doubled its price.", ASKER)
    assert (record.id, segment) == (spec.id, 2)
    (facts,) = await core.store.interjections(spec.id)
    assert (facts.kind, facts.text, facts.author, facts.round) == ("facts", "The vendor doubled its price.", "Dana",
                                                                  None)
    assert (await core.store.get_debate(spec.id, turns=False)).status == "running"  # type: ignore[union-attr]
    for n in range(3, MAX_CONTINUATIONS + 2):  # the operator (no asker) continues it up to the limit
        await core.store.finish_debate(spec.id, Outcome(status="completed", rounds_completed=n, rounds_planned=n))
        _, segment = await prepare_continuation(core, spec.id, None, None)
        assert segment == n
    await core.store.finish_debate(spec.id, Outcome(status="completed"))
    assert f"{MAX_CONTINUATIONS} times" in await refused(prepare_continuation(core, spec.id, None, None))
    core.stopping = True
    assert "restarting" in await refused(prepare_continuation(core, spec.id, None, None))


# -- rematch ------------------------------------------------------------------------------------------


async def test_a_rematch_replays_the_topic_with_other_debaters_and_links_back(core: Core) -> None:
    spec = await completed(core)
    record = await core.store.get_debate(spec.id)
    assert record is not None
    same = rematch_request(record, vs=None, format=None)
    assert (same.topic, same.format, same.rounds, same.debaters, same.judge, same.rematch_of) == (
        spec.topic, "challenge", 2, (GPT, CLAUDE), spec.judge, spec.id)
    other = rematch_request(record, vs="openai:gpt-5-mini,anthropic:claude-sonnet-4-6", format="consensus")
    assert (other.format, other.rounds, other.debaters) == ("consensus", None, ("openai:gpt-5-mini", CLAUDE))
    new, _notes = await chat_spec(other, core, platform="slack", channel=CHANNEL, requested_by="U1",
                                  workspace=WORKSPACE, channel_private=False)
    assert new.rematch_of == spec.id and new.id != spec.id and new.seats[0].model == "openai:gpt-5-mini"
    with pytest.raises(CommandError, match="format"):
        rematch_request(record, vs=None, format="shouting")


# -- channel defaults ---------------------------------------------------------------------------------


async def test_channel_defaults_are_held_to_the_chat_policy_and_cleared_with_default(core: Core) -> None:
    assert await channel_config(core, "slack", WORKSPACE, CHANNEL) == ChannelDefaults()
    for assignments, words in (({"proposer": "openai:gpt-4o"}, "not allowed from chat"),
                               ({"judge": "nonsense"}, "not provider:model"), ({"rounds": "4"}, "at most 3 round"),
                               ({"rounds": "9"}, "Rounds must be"), ({"effort": "max"}, "at most `medium`"),
                               ({"format": "brawl"}, "Unknown format"), ({"interjections": "maybe"}, "on or off")):
        message = await refused(set_channel_config(core, "slack", WORKSPACE, CHANNEL,
                                                   {"rounds": "2", **assignments}, by="U1"))
        assert words in message
    assert await channel_config(core, "slack", WORKSPACE, CHANNEL) == ChannelDefaults()  # nothing half-applied

    set_ = await set_channel_config(core, "slack", WORKSPACE, CHANNEL,
                                    {"proposer": CLAUDE, "challenger": GPT, "rounds": "3", "interjections": "off"},
                                    by="U1")
    assert (set_.proposer, set_.challenger, set_.rounds, set_.interjections) == (CLAUDE, GPT, 3, False)
    text = config_text(set_, core.settings)
    assert f"proposer: {CLAUDE} (set here)" in text and "interjections: off" in text and "format: the bot's default" \
        in text
    cleared = await set_channel_config(core, "slack", WORKSPACE, CHANNEL, {"rounds": "default", "interjections": ""},
                                       by="U1")
    assert (cleared.proposer, cleared.rounds, cleared.interjections) == (CLAUDE, None, True)
    assert await channel_config(core, "slack", WORKSPACE, CHANNEL) == cleared


async def test_a_channels_defaults_seat_the_next_debate_started_there(core: Core) -> None:
    async def seats(channel: str, command: StartDebate) -> tuple[list[str], int, str]:
        spec, _ = await chat_spec(command, core, platform="slack", channel=channel, requested_by="U1",
                                  workspace=WORKSPACE, channel_private=False)
        await core.abandon(spec.id, "only seated here")  # its slot back: the quotas allow a few at once
        return [s.model for s in spec.seats], spec.rounds, spec.judge

    topic = StartDebate(topic="Should we shard the ledger?")
    before = await seats(CHANNEL, topic)
    await set_channel_config(core, "slack", WORKSPACE, CHANNEL,
                             {"proposer": CLAUDE, "challenger": "openai:gpt-5-mini", "judge": GPT, "rounds": "1"},
                             by="U1")
    assert await seats(CHANNEL, topic) == ([CLAUDE, "openai:gpt-5-mini"], 1, GPT) != before
    assert await seats(OTHER, topic) == before  # another channel keeps the operator's defaults
    # what the user sets wins over the channel's
    mine = await seats(CHANNEL, StartDebate(topic=topic.topic, debaters=(GPT, CLAUDE), rounds=2))
    assert mine == ([GPT, CLAUDE], 2, GPT)
