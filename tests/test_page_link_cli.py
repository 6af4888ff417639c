"""`debate link ID [--revoke]` as the operator runs it: a real subprocess on a real SQLite log; the
link it prints opens the page, and after `--revoke` the old one answers 404."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from orchestrator.log import open_log
from tests.cli_harness import clean_env, debate
from tests.page_harness import PUBLIC_URL, local, log_debate, serve_pages, settings

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

SECRET = "page-secret-for-tests-0123456789ab"


async def test_debate_link_prints_the_page_link_and_revoke_makes_the_old_one_404(tmp_path: Path) -> None:
    async with open_log(tmp_path / "debates.db") as store:
        logged = await log_debate(store)
    env = clean_env(tmp_path, DEBATE_PUBLIC_URL=PUBLIC_URL + "/", DEBATE_WEB_SECRET=SECRET)
    code, first, _ = await debate(tmp_path, "link", logged.id[:6], env=env)
    assert code == 0 and first.strip().startswith(f"{PUBLIC_URL}/d/{logged.id}/")
    code, same, _ = await debate(tmp_path, "link", logged.id, env=env)
    assert code == 0 and same == first
    code, renewed, err = await debate(tmp_path, "link", logged.id, "--revoke", env=env)
    assert code == 0 and renewed.strip() != first.strip() and "404" in err
    async with open_log(tmp_path / "debates.db") as store, serve_pages(store, settings()) as served, \
            aiohttp.ClientSession() as http:
        async with http.get(local(first.strip(), served)) as response:
            assert response.status == 404
        async with http.get(local(renewed.strip(), served)) as response:
            assert response.status == 200 and logged.topic in await response.text()


async def test_debate_link_without_a_public_url_says_what_to_set(tmp_path: Path) -> None:
    async with open_log(tmp_path / "debates.db") as store:
        logged = await log_debate(store)
    code, out, err = await debate(tmp_path, "link", logged.id, env=clean_env(tmp_path))
    assert code == 2 and out == "" and "DEBATE_PUBLIC_URL is not set" in err
    code, _, err = await debate(tmp_path, "link", "nope00", env=clean_env(tmp_path, DEBATE_PUBLIC_URL=PUBLIC_URL))
    assert code == 2 and "no debate with id 'nope00'" in err
