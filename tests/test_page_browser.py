"""The debate page in a real headless Chromium (Debian's `chromium` and `chromium-driver`, started here;
.ci/run installs them): a finished debate shows every turn and the verdict; a running one gains its
next turn without a reload; a hostile model turn runs nothing and shows as text. With
DEBATE_SCREENSHOTS=1 the finished page is saved to docs/ at a phone's and a desktop's size.

Selenium is blocking, so every browser call runs in a thread while this loop serves the page."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from orchestrator.log import DebateLog, open_log
from tests.page_harness import finish, linked_debate, local, serve_pages, settings, turn

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
PHONE, DESKTOP = (390, 844), (1280, 900)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        if os.environ.get("CI"):
            pytest.fail("chromium and chromedriver are missing: apt-get install chromium chromium-driver")
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", f"--window-size={DESKTOP[0]},{DESKTOP[1]}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[DebateLog]:
    async with open_log(tmp_path / "debates.db") as s:
        yield s


async def run(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


def wait_for(driver: webdriver.Chrome, condition: Callable[[webdriver.Chrome], Any]) -> Any:
    return WebDriverWait(driver, 10, poll_frequency=0.05).until(condition)


def shown_text(driver: webdriver.Chrome) -> str:
    return driver.find_element(By.TAG_NAME, "body").text


async def test_a_finished_debate_shows_every_turn_and_the_verdict_and_runs_nothing_hostile(
        browser: webdriver.Chrome, store: DebateLog) -> None:
    config = settings()
    debate, link = await linked_debate(store, config, rounds=2, hostile=True)
    async with serve_pages(store, config) as served:
        await run(browser.set_window_size, *DESKTOP)
        await run(browser.get, local(link, served))
        await run(wait_for, browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".verdict"))
        text = await run(shown_text, browser)
        assert browser.title.startswith(debate.topic)  # the hostile turn's scripts never set it
        for number, seat in ((1, "A"), (2, "A"), (2, "B")):
            assert f"Round {number}, seat {seat}" in text
        assert "Winner: A" in text and "Adopt Postgres for the log" in text and "Dana Reviewer" in text
        hostile = await run(browser.find_element, By.CSS_SELECTOR, '[data-turn="1:B:challenge"] .text')
        shown = hostile.text
        assert "<script>document.title='pwned'</script>" in shown
        assert "<img src=x onerror=" in shown and "<iframe" in shown and "<form" in shown and "<style>" in shown
        assert "[javascript link](javascript:document.title='pwned')" in shown
        assert "[Markdown link](https://evil.example/x)" in shown and "https://evil.example/y" in shown
        for tag in ("script", "img", "iframe", "form", "style", "a", "button"):
            assert not hostile.find_elements(By.TAG_NAME, tag), tag
        scripts = [s.get_attribute("src") for s in browser.find_elements(By.TAG_NAME, "script")]
        assert scripts == [f"{served.base}/page/static/page.js"]
        assert browser.execute_script("return getComputedStyle(document.body).display") == "block"
        if os.environ.get("DEBATE_SCREENSHOTS"):
            await screenshots(browser)


async def screenshots(browser: webdriver.Chrome) -> None:
    for name, (width, height) in (("phone", PHONE), ("desktop", DESKTOP)):
        await run(browser.set_window_size, width, height)
        full = browser.execute_script("return document.documentElement.scrollHeight")
        await run(browser.set_window_size, width, min(int(full) + 20, 6000))
        await run(browser.save_screenshot, str(ROOT / "docs" / f"page-{name}.png"))
    await run(browser.set_window_size, *DESKTOP)


async def test_a_running_debates_page_gains_the_next_turn_without_a_reload(
        browser: webdriver.Chrome, store: DebateLog) -> None:
    config = settings()
    debate, link = await linked_debate(store, config, rounds=1, finished=False)
    async with serve_pages(store, config, poll_s=0.1) as served:
        await run(browser.get, local(link, served))
        await run(wait_for, browser, lambda d: "Round 1, seat B" in shown_text(d))
        browser.execute_script("window.sameDocument = 'yes'")
        await store.add_turn(turn(debate.id, 2, "A", "The **second** round, streamed to the open page."))
        await run(wait_for, browser, lambda d: "The second round, streamed to the open page." in shown_text(d))
        await finish(store, debate, 2)
        await run(wait_for, browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".verdict"))
        await run(wait_for, browser, lambda d: d.execute_script("return !document.getElementById('debate')"
                                                                ".dataset.events"))
        assert browser.execute_script("return window.sameDocument") == "yes"  # never reloaded
        assert "completed" in await run(shown_text, browser)
