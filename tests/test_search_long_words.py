"""A search for a long run of symbols is "no matches" (or the matches), never an error, on both logs:
Postgres refuses a tsquery word of 2,047 bytes or more ("word is too long in tsquery")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bots.slack.listeners.command import SOMETHING_WENT_WRONG
from orchestrator.log import DebateLog
from tests.cli_harness import clean_env, debate
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.log_backends import LogBackend
from tests.store_harness import make_spec

LONG_RUNS = {"512 emoji": "😀" * 512, "683 stars": "★" * 683, "1000 arrows": "→" * 1000}


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


@pytest.mark.parametrize("query", list(LONG_RUNS.values()), ids=list(LONG_RUNS))
async def test_a_long_run_of_symbols_is_no_matches(store: DebateLog, query: str) -> None:
    cats = make_spec("Cats or dogs for a débat club? 🐈 ★ →")
    await store.create_debate(cats)
    assert await store.search(query) == []
    assert await store.search(f"{query} {query}") == []
    assert await store.search(f"cats {query}") in ([], [*await store.search("cats")])
    assert [h.debate_id for h in await store.search("★")] == [cats.id]  # a short symbol still matches


async def test_words_past_any_limit_are_no_matches(store: DebateLog) -> None:
    """Longer words and many of them: each ends as a list of hits, never an error."""
    cats = make_spec("Cats or dogs for a débat club?")
    await store.create_debate(cats)
    for query in ("é" * 1500, "x" * 3000, " ".join(["😀" * 600] * 50), "cats " * 2000, "(" * 5000 + "cats",
                  '"' + "★ " * 3000 + '"'):
        hits = await store.search(query)
        assert all(h.debate_id == cats.id for h in hits), query[:20]


@pytest.mark.slow
@pytest.mark.postgres
async def test_a_query_postgres_still_refuses_is_no_matches(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the word trim, whatever tsquery refuses is answered as no matches, and the log stays usable."""
    from orchestrator.log.postgres import search as pg_search

    monkeypatch.setattr(pg_search, "MAX_WORD_BYTES", 10**6)
    async with LogBackend("postgres", postgres_url).open() as store:
        cats = make_spec("Cats or dogs for a débat club?")
        await store.create_debate(cats)
        assert await store.search("😀" * 512) == []
        assert [h.debate_id for h in await store.search("cats")] == [cats.id]


@pytest.mark.slow
@pytest.mark.postgres
async def test_a_refused_query_inside_a_transaction_leaves_it_usable(postgres_url: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The log searches in autocommit (one statement); a caller already in a transaction gets a savepoint."""
    import psycopg

    from orchestrator.log.postgres import search as pg_search
    from orchestrator.log.postgres.store import PgConn

    monkeypatch.setattr(pg_search, "MAX_WORD_BYTES", 10**6)
    async with LogBackend("postgres", postgres_url).open() as store:
        cats = make_spec("Cats or dogs for a débat club?")
        await store.create_debate(cats)
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        async with conn.transaction(force_rollback=True):
            assert await pg_search.search(PgConn(conn), conn, "😀" * 512, 20, None) == []
            assert [h.debate_id for h in await pg_search.search(PgConn(conn), conn, "cats", 20, None)] == [cats.id]
        assert await pg_search.search(PgConn(conn), conn, "😀" * 512, 20, None) == []  # outside: no savepoint
        assert [h.debate_id for h in await pg_search.search(PgConn(conn), conn, "cats", 20, None)] == [cats.id]


@pytest.mark.slow
async def test_debate_search_answers_a_long_run(log_backend: LogBackend, tmp_path: Path) -> None:
    """`debate search` as a user runs it, on either log: a line of output and exit 0, no traceback."""
    async with log_backend.open() as store:
        await store.create_debate(make_spec("Cats or dogs for a débat club?"))
    for query in LONG_RUNS.values():
        code, out, err = await debate(tmp_path, "search", query, env=clean_env(tmp_path) | log_backend.env)
        assert (code, out.strip(), err) == (0, "No matches.", "")


@pytest.mark.slow
async def test_slack_search_for_a_long_run_gets_a_reply(log_backend: LogBackend, tmp_path: Path) -> None:
    """`/debate search` through bolt's dispatch, on either log: the asker is answered, whatever the query."""
    async with FakeLLMServer() as llm, SlackAPIPeer() as peer:
        storage = {"DEBATE_DATABASE_URL": log_backend.target} if log_backend.name == "postgres" else {}
        settings = slack_settings(str(tmp_path / "slack.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  **storage)
        async with SlackBot(settings) as bot:
            for query in LONG_RUNS.values():
                status, _ = await bot.command(f"search {query}", peer)
                assert status == 200
            await bot.settle()
    answers = [c.params.get("text", "") for c in peer.of("response_url")]
    assert len(answers) == len(LONG_RUNS) and all(a.startswith("Nothing found for") for a in answers), answers


@pytest.mark.slow
async def test_slack_answers_a_command_that_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever goes wrong inside a command, the asker gets one line saying so."""
    async with FakeLLMServer() as llm, SlackAPIPeer() as peer:
        settings = slack_settings(str(tmp_path / "slack.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings) as bot:

            async def broken(*args: object, **kwargs: object) -> list[object]:
                raise RuntimeError("the index is gone")

            monkeypatch.setattr(bot.core.store, "search", broken)
            status, _ = await bot.command("search cats", peer)
            await bot.settle()
    assert status == 200
    assert [c.params.get("text") for c in peer.of("response_url")] == [SOMETHING_WENT_WRONG]
