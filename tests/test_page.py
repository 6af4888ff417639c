"""The debate page over HTTP, on a real front (bots/web.py) with a real log on both databases:
every turn and verdict, keys (wrong, missing, revoked: the same 404 with nothing of the debate),
the headers of every answer, the exports, the rate limit, and the live stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from bots.page import RateLimit, page_link
from orchestrator.export import from_json, to_json
from orchestrator.log import DebateLog
from orchestrator.models import DebateSpec, Interjection, Seat, StanceScore, Turn, Verdict
from tests.log_backends import LogBackend
from tests.page_harness import PUBLIC_URL, finish, local, log_debate, read_events, serve_pages, settings, turn

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
}


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


def assert_secured(response: aiohttp.ClientResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, name
    csp = response.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp
    assert "script-src 'self'" in csp and "style-src 'self'" in csp
    assert "unsafe-inline" not in csp and "default-src 'none'" in csp


async def test_page_shows_every_turn_note_verdict_vote_and_cost(store: DebateLog) -> None:
    config = settings()
    debate = await log_debate(store, rounds=3)
    link = await page_link(store, config, debate.id)
    assert link is not None and link.startswith(f"{PUBLIC_URL}/d/{debate.id}/")
    async with serve_pages(store, config) as served, aiohttp.ClientSession() as http:
        async with http.get(local(link, served)) as response:
            assert response.status == 200
            assert_secured(response)
            html = await response.text()
    assert debate.topic in html and "openai:gpt-5" in html and "anthropic:claude-sonnet-4-5" in html
    for number in (1, 2, 3):
        assert f"Round {number}, seat A" in html and f"Round {number}, seat B" in html
    assert "<strong>evidence</strong>" in html  # model Markdown rendered
    assert "Dana Reviewer" in html and "What about backups?" in html
    for part in ("Decisive evidence", "p99 of 12 ms under load", "high confidence", "Adopt Postgres for the log",
                 "Pooling caps connections", "Cost of operating it", "Backup cadence", "A cited measurements"):
        assert part in html, part
    assert "the team: <b>1–0 for B</b>" in html and "sided against the judge" in html
    assert "$0.0123" in html and "5400 input and 2400 output tokens" in html
    assert f'og:title" content="{debate.topic}"' in html and 'og:url" content="' + link in html
    assert "/export.md" in html and "/export.json" in html


async def test_wrong_missing_and_revoked_keys_get_404_with_nothing_of_the_debate(store: DebateLog) -> None:
    config = settings()
    debate = await log_debate(store)
    unlinked = await log_debate(store)  # never given a link: no key exists for it
    old = await page_link(store, config, debate.id)
    assert old is not None
    new = await page_link(store, config, debate.id, renew=True)
    assert new is not None and new != old
    again = await page_link(store, config, debate.id)
    assert again == new  # a link, once made, is the same until it is revoked
    async with serve_pages(store, config) as served, aiohttp.ClientSession() as http:
        wrong = local(new, served)[:-4] + "AAAA"
        refused = [old, wrong, f"{served.base}/d/{debate.id}", f"{served.base}/d/{debate.id}/",
                   f"{served.base}/d/{unlinked.id}/{new.rsplit('/', 1)[1]}", local(old, served) + "/events",
                   local(old, served) + "/export.json", f"{served.base}/d/{debate.id[:6]}/{new.rsplit('/', 1)[1]}"]
        for url in refused:
            async with http.get(local(url, served)) as response:
                body = await response.text()
                assert response.status == 404, url
                assert_secured(response)
                assert debate.topic not in body and debate.id not in body and "Postgres" not in body
        async with http.get(local(new, served)) as response:
            assert response.status == 200


async def test_without_a_public_url_no_link_is_made(store: DebateLog, log_backend: LogBackend) -> None:
    debate = await log_debate(store)
    assert await page_link(store, settings(DEBATE_PUBLIC_URL=None), debate.id) is None
    assert await store.stored_page_token(debate.id) is None  # no key was made either
    assert log_backend.sql("select count(*) from page_keys") == [(0,)]


async def test_exports_and_static_files_are_served_with_the_headers(store: DebateLog) -> None:
    config = settings()
    debate = await log_debate(store)
    link = await page_link(store, config, debate.id)
    assert link is not None
    async with serve_pages(store, config) as served, aiohttp.ClientSession() as http:
        async with http.get(local(link, served) + "/export.md") as response:
            assert response.status == 200 and response.content_type == "text/markdown"
            assert_secured(response)
            assert debate.topic in await response.text()
        async with http.get(local(link, served) + "/export.json") as response:
            assert response.status == 200
            assert_secured(response)
            assert (await response.json())["id"] == debate.id
        for name, kind in (("page.css", "text/css"), ("page.js", "text/javascript")):
            async with http.get(f"{served.base}/page/static/{name}") as response:
                assert response.status == 200 and response.content_type == kind
                assert_secured(response)


async def test_the_page_exports_carry_display_names_and_no_platform_ids(store: DebateLog) -> None:
    """Item 10 of issue 57: export.json gave anyone holding the link the Slack ids the page hides."""
    config = settings()
    ids = {"workspace": "T0WORKSPACE1", "channel": "C0CHANNEL22", "thread": "1700000000.000100",
           "requested_by": "U0REQUESTER3"}
    debate = await log_debate(store, platform="slack", finished=False, **ids)
    await store.add_interjection(Interjection(debate_id=debate.id, author="Kim Auditor", user="U0NOTEUSER44",
                                              platform="slack", text="Who pays for the replicas?"), max_waiting=5)
    await finish(store, debate, 2)
    link = await page_link(store, config, debate.id)
    assert link is not None
    async with serve_pages(store, config) as served, aiohttp.ClientSession() as http:
        async with http.get(local(link, served) + "/export.json") as response:
            assert response.status == 200
            body = await response.text()
        async with http.get(local(link, served) + "/export.md") as response:
            markdown = await response.text()
        async with http.get(local(link, served)) as response:
            html = await response.text()
    shown = json.loads(body)
    for secret in (*ids.values(), "U0NOTEUSER44"):
        assert secret not in body and secret not in markdown and secret not in html, secret
    assert {"workspace", "channel", "thread", "requested_by", "channel_private"}.isdisjoint(shown)
    assert {"workspace", "channel", "thread", "requested_by"}.isdisjoint(shown["spec"])
    assert {n["author"] for n in shown["interjections"]} == {"Dana Reviewer", "Kim Auditor"}
    assert "Kim Auditor" in html and shown["platform"] == "slack" and shown["topic"] == debate.topic
    assert len(shown["turns"]) == 4 and shown["verdict"]["winner_label"] == "A"
    assert from_json(shown).id == debate.id  # still a debate-bot export
    kept = to_json(await store.get_debate(debate.id))  # type: ignore[arg-type]  # the operator's export (the CLI's) keeps every id
    assert {kept[k] for k in ids} == set(ids.values()) and kept["spec"]["requested_by"] == "U0REQUESTER3"
    assert [n["user"] for n in kept["interjections"] if n["author"] == "Kim Auditor"] == ["U0NOTEUSER44"]


async def test_page_requests_are_rate_limited_per_client_address(store: DebateLog) -> None:
    config = settings()
    debate = await log_debate(store)
    link = await page_link(store, config, debate.id)
    assert link is not None
    async with serve_pages(store, config, limit=RateLimit(rate=0.01, burst=3)) as served, \
            aiohttp.ClientSession() as http:
        statuses = []
        for _ in range(5):
            async with http.get(local(link, served)) as response:
                statuses.append(response.status)
                assert_secured(response)
    assert statuses == [200, 200, 200, 429, 429]


def test_a_bucket_refills_with_time() -> None:
    limit = RateLimit(rate=1.0, burst=2)
    assert [limit.allow("a", at=0.0) for _ in range(3)] == [True, True, False]
    assert limit.allow("b", at=0.0)  # another address has its own bucket
    assert limit.allow("a", at=1.5)


async def test_a_running_debates_stream_sends_each_new_turn_and_ends_at_the_verdict(store: DebateLog) -> None:
    config = settings()
    debate = await log_debate(store, rounds=2, finished=False)
    link = await page_link(store, config, debate.id)
    assert link is not None
    async with serve_pages(store, config, poll_s=0.05) as served, aiohttp.ClientSession() as http:
        async with http.get(local(link, served)) as response:
            assert 'data-events="' in await response.text()  # a running debate's page follows it
        async with http.get(local(link, served) + "/events") as response:
            assert response.status == 200 and response.content_type == "text/event-stream"
            assert_secured(response)
            events = read_events(response)
            name, first = await anext(events)
            assert name == "main" and "Round 2, seat B" in first
            await store.add_turn(turn(debate.id, 3, "A", "A third round arrives live."))
            name, html = await anext(events)
            assert name == "main" and "A third round arrives live." in html
            await finish(store, debate, 3)
            seen = [message async for message in events]  # the verdict, the vote, the end may come apart
            assert seen[-1][0] == "end" and all(name == "main" for name, _ in seen[:-1])
            assert "Adopt Postgres for the log" in seen[-2][1] and "status-completed" in seen[-2][1]


async def test_a_council_debates_page_shows_its_answers_ranking_and_synthesis(store: DebateLog) -> None:
    config = settings()
    seats = tuple(Seat(label=label, role="debater", model="openai:gpt-5") for label in ("A", "B", "C"))
    debate = DebateSpec(topic="Which queue should we run?", format="council", rounds=1, seats=seats,
                        judge="openai:gpt-5")
    await store.create_debate(debate)
    for label in ("A", "B", "C"):
        await store.add_turn(Turn(debate_id=debate.id, round=1, seat=label, role="debater", kind="answer",
                                  model="openai:gpt-5", text=f"Member {label}'s answer: use queue-{label}."))
    scores = tuple(StanceScore(seat=s, stance=f"council place {n}", score=7 - 2 * n) for n, s in enumerate("BAC", 1))
    await store.set_verdict(debate.id, Verdict(winner="B", reasoning="The council ranked Member B's answer first.",
                                               recommendation="Run queue-B, with A's retries.", scores=scores))
    link = await page_link(store, config, debate.id)
    assert link is not None
    async with serve_pages(store, config) as served, aiohttp.ClientSession() as http, \
            http.get(local(link, served)) as response:
        assert response.status == 200
        html = await response.text()
    for label in ("A", "B", "C"):
        assert f"use queue-{label}." in html
    assert "council place 1" in html and html.index("council place 1") < html.index("council place 3")
    assert "Run queue-B, with A&#39;s retries." in html or "Run queue-B, with A's retries." in html
