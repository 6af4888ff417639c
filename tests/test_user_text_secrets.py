"""A secret a person types (into a topic, an audience note, the facts of a `continue`, a channel setting)
is scrubbed on the way in: no platform write, no byte of the log and no model prompt carries it. Through
bolt's real dispatch against the Slack API peer, and through `debate` as real subprocesses; the LLM peer's
records are what the models read."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bots.slack.surface import slack_limits
from tests.cli_harness import debate, two_providers
from tests.cli_team_harness import debate_with_stdin
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SIGNING_SECRET, SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_held, script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

LIMITS = slack_limits(post_interval=0.01, updates=1000, window=1.0, edit_interval=0.05)
TOPIC_KEY = "sk-proj-Q7vX2mR9tL4pW8nZ3kB6yH1c"  # OpenAI's key shape
NOTE_KEY = "xoxp-2211334455-abcdefghijkl"  # a Slack user token
FACTS_KEY = "AIzaSyD4-9gUq2Lx0bWcR7tYe5nVm3kPjH8sZaQ"  # a Google API key
CONFIG_KEY = "sk-ant-api03-Kd8sLq2Wm9xPz4Rt7Vb1"  # Anthropic's
SECRETS = (TOPIC_KEY, NOTE_KEY, FACTS_KEY, CONFIG_KEY, SIGNING_SECRET)
TOPIC = f"Should ingest move to Go? Our staging key is {TOPIC_KEY} if you need it."
NOTE = f"Use my token {NOTE_KEY} and the signing secret {SIGNING_SECRET} to check the p99 numbers."
FACTS = f"The vendor's key {FACTS_KEY} was rotated last week."


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def files_leak(root: Path) -> list[tuple[str, str]]:
    """Every file under `root` (the SQLite log, its WAL, the workflow state) read as bytes, for each secret."""
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [(path.name, s) for s in SECRETS if s.encode() in data]
    return found


def prompts_leak(llm: FakeLLMServer) -> list[str]:
    return [s for r in llm.requests for s in leaks(json.dumps(r.body, ensure_ascii=False))]


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        p.declare_user("U5", display_name="Dana Scully")
        p.declare_user("U9", "admin")
        yield p


async def test_secrets_typed_in_slack_reach_no_slack_write_no_log_and_no_prompt(
    tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url,
                              llm_server.anthropic_base_url, DEBATE_CHAT_MODELS="openai:*,anthropic:*")
    acks: list[str] = []

    async def command(text: str, **kwargs: str) -> None:
        status, body = await bot.command(text, peer, response_url=peer.response_url(f"k{len(acks)}"), **kwargs)
        assert status == 200
        acks.append(body)

    async with SlackBot(settings, LIMITS) as bot:
        await command(f"config proposer=anthropic:{CONFIG_KEY}", user="U9", channel="C3")
        await command(f"config interjections={CONFIG_KEY}", user="U9", channel="C3")  # refused, quoting it
        gate = asyncio.Event()
        script_held(llm_server, gate)
        await command(f"{TOPIC} --rounds 2", channel="C1", user="U2")
        await llm_server.wait_for_requests(1)
        (summary,) = await bot.core.store.history(5)
        await command(f"interject {summary.id} {NOTE}", user="U5")
        await peer.wait_for(lambda p: [c for c in p.of("response_url") if c.params["key"] == "k3"])  # noted
        gate.set()
        await bot.settle()
        await command(f"continue {summary.id} {FACTS}", user="U2")
        await bot.settle()
        await command(f"show {summary.id}", user="U2")
        await bot.settle()
        record = await bot.core.store.get_debate(summary.id)
        defaults = await bot.core.store.channel_defaults("slack", "T1", "C3")

    assert record is not None and record.status == "completed" and record.segment == 2
    assert record.topic == "Should ingest move to Go? Our staging key is [redacted] if you need it."
    assert [n.text for n in record.interjections] == [
        "Use my token [redacted] and the signing secret [redacted] to check the p99 numbers.",
        "The vendor's key [redacted] was rotated last week."]
    assert defaults.proposer == "anthropic:[redacted]" and defaults.interjections
    refusal = next(c.params["text"] for c in peer.of("response_url") if c.params["key"] == "k1")
    assert "`interjections` is on or off, not `[redacted]`" in refusal
    sent = [(c.method, s) for c in peer.calls for s in leaks(json.dumps(c.params, ensure_ascii=False))]
    assert sent == [], "no Slack write carries a secret"
    assert [leaks(body) for body in acks] == [[]] * len(acks)
    assert any("[redacted]" in json.dumps(c.params) for c in peer.of("chat.postMessage")), "the root shows it scrubbed"
    assert files_leak(tmp_path) == []
    assert prompts_leak(llm_server) == []
    assert any("staging key is [redacted]" in r.last_user for r in llm_server.requests)


async def test_secrets_given_to_the_cli_reach_no_output_no_log_and_no_prompt(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        env = two_providers(tmp_path, srv) | {"SLACK_SIGNING_SECRET": SIGNING_SECRET}  # a configured secret
        code, out, err = await debate_with_stdin(tmp_path, NOTE + "\n\n", "run", TOPIC, "--interactive", "--json",
                                                 env=env)
        assert code == 0, err
        debate_id = json.loads(out)["id"]
        outputs = [out, err]
        code, out, err = await debate(tmp_path, "continue", debate_id, FACTS, env=env)
        assert code == 0, err
        outputs += [out, err]
        prompts = prompts_leak(srv)
        shown = any("staging key is [redacted]" in r.last_user for r in srv.requests)
    for args in (("show", debate_id), ("show", debate_id, "--json"), ("export", debate_id, "--format", "json"),
                 ("export", debate_id, "--format", "md")):
        code, out, err = await debate(tmp_path, *args, env=env)
        assert code == 0, err
        outputs += [out, err]

    assert [leaks(text) for text in outputs] == [[]] * len(outputs)
    exported = json.loads(outputs[-4])  # export --format json
    assert exported["topic"] == "Should ingest move to Go? Our staging key is [redacted] if you need it."
    assert [n["text"] for n in exported["interjections"]] == [
        "Use my token [redacted] and the signing secret [redacted] to check the p99 numbers.",
        "The vendor's key [redacted] was rotated last week."]
    assert files_leak(tmp_path) == []
    assert prompts == [] and shown
