"""Debates logged through the real log API, and a front serving their pages on loopback (bots/page)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp

from bots.page import PageSite, RateLimit, page_link
from bots.settings import BotSettings
from bots.web import WebFront
from orchestrator.log import DebateLog
from orchestrator.models import DebateSpec, Interjection, Outcome, Seat, Turn, Verdict, Vote
from orchestrator.operations import Operations

HOSTILE = (
    "Consider this: <script>document.title='pwned'</script> and <img src=x onerror=\"document.title='pwned'\">"
    " and <iframe src=\"https://evil.example\"></iframe> <form action=\"https://evil.example\"><button>go</button>"
    "</form> <style>body{display:none}</style>\n\n"
    "A [javascript link](javascript:document.title='pwned') and a [Markdown link](https://evil.example/x)"
    " and a bare https://evil.example/y <a href=\"https://evil.example/z\">anchor</a>."
)
PUBLIC_URL = "https://debate.example.com"


def settings(**extra: object) -> BotSettings:
    values: dict[str, object] = {"DEBATE_PUBLIC_URL": PUBLIC_URL,
                                 "DEBATE_WEB_SECRET": "page-secret-for-tests-0123456789ab"}
    values.update(extra)
    return BotSettings(_env_file=None, **values)  # type: ignore[arg-type]


def spec(topic: str = "Should we adopt Postgres for the debate log?", *, rounds: int = 2,
         **where: object) -> DebateSpec:
    seats = (Seat(label="A", role="proposer", model="openai:gpt-5"),
             Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-5"))
    return DebateSpec(topic=topic, rounds=rounds, seats=seats, judge="gemini:gemini-2.5-pro", **where)  # type: ignore[arg-type]


def turn(debate_id: str, round: int, seat: str, text: str) -> Turn:
    role = "proposer" if seat == "A" else "challenger"
    kind = ("opening" if seat == "A" else "challenge") if round == 1 else ("defense" if seat == "A" else "follow-up")
    model = "openai:gpt-5" if seat == "A" else "anthropic:claude-sonnet-4-5"
    return Turn(debate_id=debate_id, round=round, seat=seat, role=role, kind=kind, model=model,  # type: ignore[arg-type]
                text=text, duration_ms=1200, input_tokens=900, output_tokens=400)


def turn_text(round: int, seat: str) -> str:
    return (f"Round {round}, seat {seat}: the **evidence** says `pg_stat_statements` shows p99 of 12 ms.\n\n"
            "- first, replication is built in\n- second, the pool caps connections\n")


VERDICT = Verdict(
    winner="A", confidence="high", evidence=("Round 2, A: p99 of 12 ms under load",),
    reasoning="A cited measurements; B conceded the pooling point.",
    recommendation="Adopt Postgres for the log behind the existing interface, starting next sprint.",
    agreements=("Pooling caps connections",), disagreements=("Cost of operating it",),
    unresolved=("Backup cadence",), ratings={"genuine_disagreement": "high", "evidence_quality": "medium"},
)


async def log_debate(store: DebateLog, *, rounds: int = 2, finished: bool = True, hostile: bool = False,
                     **where: object) -> DebateSpec:
    """A debate with every turn of `rounds` rounds, an audience note, votes and (finished) a verdict."""
    debate = spec(rounds=rounds, **where)
    await store.create_debate(debate)
    for number in range(1, rounds + 1):
        if number == 2:
            await store.add_interjection(Interjection(debate_id=debate.id, author="Dana Reviewer",
                                                      text="What about backups?"), max_waiting=5)
            await store.take_interjections(debate.id, 2, 3)
        for seat in ("A", "B"):
            text = HOSTILE if hostile and (number, seat) == (1, "B") else turn_text(number, seat)
            await store.add_turn(turn(debate.id, number, seat, text))
    if finished:
        await finish(store, debate, rounds)
    return debate


async def linked_debate(store: DebateLog, config: BotSettings, **options: Any) -> tuple[DebateSpec, str]:
    """`log_debate(store, **options)` and its page link."""
    debate = await log_debate(store, **options)
    link = await page_link(store, config, debate.id)
    assert link is not None
    return debate, link


async def finish(store: DebateLog, debate: DebateSpec, rounds: int) -> None:
    await store.set_verdict(debate.id, VERDICT)
    await store.record_vote(Vote(debate_id=debate.id, user="U1", choice="side:B"))
    await store.finish_debate(debate.id, Outcome(status="completed", rounds_completed=rounds, rounds_planned=rounds,
                                                 input_tokens=900 * 2 * rounds, output_tokens=400 * 2 * rounds,
                                                 cost_usd=0.0123))


def operations(store: DebateLog) -> Operations:
    """The core's operations over `store`, as a front's Core carries them (what the pages read through)."""
    ops = Operations()
    ops.store = store
    return ops


@dataclass
class Served:
    base: str  # http://127.0.0.1:PORT
    site: PageSite


@asynccontextmanager
async def serve_pages(store: DebateLog, config: BotSettings, *, limit: RateLimit | None = None,
                      poll_s: float | None = None, feed: Any = None) -> AsyncIterator[Served]:
    """A front serving the pages; `feed`: its workflow feed (the live turns' text as it streams)."""
    front = WebFront()
    site = PageSite(operations(store), config, lambda: feed, limit=limit, poll_s=poll_s)
    site.mount(front)
    async with front.listen("127.0.0.1", 0) as port:
        try:
            yield Served(f"http://127.0.0.1:{port}", site)
        finally:
            await site.close()


def local(link: str, served: Served) -> str:
    """A public page link, at the loopback front that serves it."""
    return link.replace(PUBLIC_URL, served.base)


async def read_events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, str]]:
    name, data = "", []
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif not line and name:
            yield name, "\n".join(data)
            name, data = "", []
