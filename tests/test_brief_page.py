"""The debate page lists the brief: each source's label, title, kind and size, its link when it was fetched,
and its text behind a disclosure, escaped like everything else on the page."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from bots.page import page_link
from orchestrator.brief.gather import Material, gather
from orchestrator.log import DebateLog
from tests.log_backends import LogBackend
from tests.page_harness import local, serve_pages, settings, spec


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


async def test_the_page_lists_the_sources_with_their_text_behind_a_disclosure(store: DebateLog) -> None:
    brief = await gather([
        Material(origin="plan.md", name="plan.md", data=b"# Plan\nShip <script>alert(1)</script> in May."),
        Material(origin="https://wiki.example/pricing", name="pricing.txt", url="https://wiki.example/pricing",
                 data=b"Seats cost 12 dollars."),
        Material(origin="bad", name="bad.txt", url="javascript:alert(1)", data=b"never a link"),
    ])
    debate = spec().model_copy(update={"brief": brief})
    await store.create_debate(debate)
    config = settings()
    link = await page_link(store, config, debate.id)
    assert link is not None
    async with serve_pages(store, config) as served, aiohttp.ClientSession() as http:
        async with http.get(local(link, served)) as response:
            assert response.status == 200
            html = await response.text()
    assert '<section class="brief" id="brief">' in html
    assert "<details><summary><b>S1</b> Plan" in html and "markdown · 45 B · 1 sections" in html
    assert "Ship &lt;script&gt;alert(1)&lt;/script&gt; in May." in html and "<script>alert" not in html
    assert '<a href="https://wiki.example/pricing" rel="noreferrer nofollow noopener">link</a>' in html
    assert "javascript:" not in html
