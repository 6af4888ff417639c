"""`debate purge` and `debate audit` as the operator runs them (issue 55): real subprocesses on a real SQLite
file and a real Postgres database. `--dry-run` prints what would go and changes nothing; `--user` leaves no
row holding the person's id or name outside the audit trail; a purged debate's page answers 404 and `show`
says it was purged; `debate audit` lists a config change, a stop by an admin, a link revoke and a purge, with
their actors; bad usage is one line and exit status 2."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiohttp
import psycopg
import pytest

from orchestrator.log.audit import Actor
from orchestrator.models import ChannelDefaults, Interjection, Outcome, Vote
from tests.cli_harness import clean_env, debate
from tests.log_backends import LogBackend
from tests.page_harness import PUBLIC_URL, local, serve_pages, settings
from tests.postgres_writes_harness import _until_waiting
from tests.purge_log_harness import NOON, PERSON, PERSON_NAME, dump, holding, rows_of
from tests.purge_log_harness import debate as seed

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

SECRET = "page-secret-for-tests-0123456789abcdef0123456789"


def env_for(tmp_path: Path, log_backend: LogBackend) -> dict[str, str]:
    return clean_env(tmp_path, DEBATE_PUBLIC_URL=PUBLIC_URL + "/", DEBATE_WEB_SECRET=SECRET) | log_backend.env


async def test_purge_dry_run_then_a_persons_purge_then_show_and_the_page(tmp_path: Path,
                                                                         log_backend: LogBackend) -> None:
    async with log_backend.open(runner="serve:a") as store:
        theirs = await seed(store, PERSON, NOON - 3600, word="cassandra")
        others = await seed(store, "U2", NOON - 1800, word="postgres", finish=False,
                            turn_text=f"{PERSON_NAME} asked whether postgres is enough")
        await store.record_vote(Vote(debate_id=others, user=PERSON, choice="agree", platform="slack"))
        await store.add_interjection(Interjection(debate_id=others, author=PERSON_NAME, user=PERSON,
                                                  platform="slack", text="and backups?"), max_waiting=5)
        await store.finish_debate(others, Outcome(status="completed", rounds_completed=1), at=NOON)
    env = env_for(tmp_path, log_backend)
    code, old_link, err = await debate(tmp_path, "link", theirs, env=env)
    assert code == 0, err
    before = dump(log_backend)

    code, out, err = await debate(tmp_path, "purge", "--user", PERSON, "--dry-run", env=env)
    assert code == 0, err
    assert "Would purge 1 debate (2 turns, 1 notes, 1 votes, 0 sources)." in out and theirs in out
    assert "votes and notes in every other debate would be deleted" in out
    assert dump(log_backend) == before, "a dry run changes nothing"

    code, out, err = await debate(tmp_path, "purge", "--user", PERSON, env=env)
    assert code == 0, err
    assert "Purged 1 debate" in out and f"{PERSON} removed from 1 other debates: 1 votes and 1 notes deleted" in out
    assert holding(log_backend, PERSON) == {} and holding(log_backend, PERSON_NAME) == {}

    code, out, err = await debate(tmp_path, "show", theirs, env=env)
    assert code == 2 and out == "" and f"debate {theirs} was purged on request" in err
    assert len(err.strip().splitlines()) == 1
    code, out, _ = await debate(tmp_path, "show", others, env=env)
    assert code == 0 and "postgres" in out and PERSON_NAME not in out

    async with log_backend.open() as store, serve_pages(store, settings()) as served, aiohttp.ClientSession() as http:
        async with http.get(local(old_link.strip(), served)) as response:
            assert response.status == 404, "a purged debate's page answers 404"


async def test_purge_refuses_bad_usage_in_one_line(tmp_path: Path, log_backend: LogBackend) -> None:
    env = env_for(tmp_path, log_backend)
    for args, said in ((["purge"], "say what to purge"),
                       (["purge", "--before", "2026-13-01"], "--before takes a UTC date"),
                       (["purge", "--debate", "zzzz9999"], "no debate with id 'zzzz9999'"),
                       (["audit", "--since", "yesterday-ish"], "--since takes a span")):
        code, out, err = await debate(tmp_path, *args, env=env)
        assert code == 2 and out == "" and said in err and len(err.strip().splitlines()) == 1, (args, err)


async def test_audit_lists_a_config_change_an_admin_stop_a_revoke_and_a_purge_with_their_actors(
    tmp_path: Path, log_backend: LogBackend
) -> None:
    async with log_backend.open(runner="serve:a") as store:
        gone = await seed(store, "U1", NOON - 3600, word="kafka")
        stopped = await seed(store, "U1", NOON - 1800, word="nats", finish=False)
        await store.set_channel_defaults("slack", "T1", "C1", ChannelDefaults(rounds=3, judge="openai:gpt-5"),
                                         by="UADMIN1")
        # as the Slack and Discord stops write it (their tests: test_slack_tenancy, test_discord_tenancy)
        await store.add_audit(Actor(platform="slack", workspace="T1", user="UADMIN1").entry("stop", stopped,
                                                                                             "started by U1"))
    env = env_for(tmp_path, log_backend)
    code, _, err = await debate(tmp_path, "link", gone, "--revoke", env=env)
    assert code == 0, err
    code, _, err = await debate(tmp_path, "purge", "--debate", gone[:6], env=env)
    assert code == 0, err

    code, out, err = await debate(tmp_path, "audit", "--since", "3650d", "--json", env=env)
    assert code == 0, err
    entries = json.loads(out)["entries"]
    seen = {(e["action"], e["who"], e["target"]) for e in entries}
    assert {("config", "slack:UADMIN1", "C1"), ("stop", "slack:UADMIN1", stopped), ("link_revoke", "cli", gone),
            ("purge", "cli", f"debate {gone}")} <= seen, seen
    assert all("kafka" not in json.dumps(e) and "nats" not in json.dumps(e) for e in entries), "never topic text"
    purge_entry = next(e for e in entries if e["action"] == "purge")
    assert purge_entry["detail"].startswith("request: 1 debates, 2 turns")

    code, out, err = await debate(tmp_path, "audit", "--since", "3650d", env=env)
    assert code == 0, err
    assert "slack:UADMIN1" in out and "link_revoke" in out and "rounds=3" in out


@pytest.mark.postgres
async def test_a_purge_killed_halfway_leaves_every_debate_whole_or_gone(tmp_path: Path, postgres_url: str) -> None:
    """`debate purge` killed (SIGKILL) while it waits for the third debate's row, which another connection
    holds: the first two are gone, the rest whole; run again, it finishes the job."""
    backend = LogBackend("postgres", postgres_url)
    async with backend.open() as store:
        ids = [await seed(store, "U1", NOON + i, workspace="T5", word=f"kill{i}x") for i in range(5)]
    whole = {i: rows_of(backend, i) for i in ids}
    env = env_for(tmp_path, backend)
    code, _, err = await debate(tmp_path, "purge", "--workspace", "none-yet", env=env)  # the workflow schema made
    assert code == 0, err  # (its CREATE INDEX CONCURRENTLY waits for every open transaction, the holder's too)
    holder = psycopg.connect(postgres_url)
    try:
        holder.execute("select 1 from debates where id = %s for update", [ids[2]])
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.cli", "purge", "--workspace", "T5", cwd=tmp_path, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            await _until_waiting(postgres_url, 1)
        finally:
            proc.kill()
            await proc.wait()
    finally:
        holder.rollback()
        holder.close()
    for gone in ids[:2]:
        assert set(rows_of(backend, gone).values()) == {0}, "gone"
    for kept in ids[2:]:
        assert rows_of(backend, kept) == whole[kept], "whole"
    code, out, err = await debate(tmp_path, "purge", "--workspace", "T5", env=env)
    assert code == 0 and "Purged 3 debates" in out, err
    assert all(set(rows_of(backend, i).values()) == {0} for i in ids)
