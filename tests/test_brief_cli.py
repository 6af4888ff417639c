"""`debate run --context` as users run it: a real subprocess, the real SDKs against the loopback LLM peer, a
PDF and a Markdown file on disk and a page served by a loopback web server named in
DEBATE_FETCH_ALLOW_HOSTS. Every debater's and judge's prompt (as the peer recorded it) holds the brief's
quoted sections with their anchors; `show` and both exports list the sources; a refused URL is one line and
the debate goes on; `continue` keeps the brief and adds to it; `rematch` keeps it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_harness import debate, two_providers
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.web_source import SourceServer
from tests.llm_scripts import is_judge, script_judge
from tests.pdf_maker import make_pdf

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

PAGE = b"""<html><head><title>Vendor pricing</title></head><body><nav>Home | Login</nav><article>
<h1>Plans</h1><p>The team plan costs 12 dollars a seat each month, billed yearly.</p>
<h2>Limits</h2><p>The team plan stops at 50 seats; past that the enterprise plan is required.</p>
</article><footer>Cookie banner</footer></body></html>"""


def source_anchors(prompt: str) -> list[tuple[str, str]]:
    return re.findall(r'^<source id="(S\d)" anchor="([^"]+)"', prompt, re.MULTILINE)


async def test_a_cli_debate_reads_a_pdf_a_markdown_file_and_a_url(tmp_path: Path) -> None:
    (tmp_path / "rfc.pdf").write_bytes(make_pdf(["Proposal: move ingest to a queue.",
                                                 "Cost: two engineers for one quarter."], title="RFC 12"))
    (tmp_path / "notes.md").write_text("# Incident notes\nIngest fell over twice in May.\n\n## Cause\n"
                                       "The batch job held a lock for 40 minutes.\n")
    async with FakeLLMServer() as srv, SourceServer() as web:
        web.pages["/pricing"] = ("text/html; charset=utf-8", PAGE)
        script_judge(srv, "A")
        srv.default = Reply(text='As [S1 p.2 "two engineers for one quarter"] shows, the cost is modest.')
        env = two_providers(tmp_path, srv) | {"DEBATE_FETCH_ALLOW_HOSTS": web.allow_hosts}
        code, out, err = await debate(tmp_path, "run", "Should ingest move to a queue?", "--rounds", "1",
                                      "--context", "rfc.pdf", "--context", str(tmp_path / "notes.md"),
                                      "--context", web.url("/pricing"),
                                      "--context", "http://169.254.169.254/latest/meta-data/", env=env)
        assert code == 0, err
        assert "📎 S1 · RFC 12 (pdf" in out and "📎 S2 · Incident notes (markdown" in out
        assert "📎 S3 · Plans (html" in out and web.url("/pricing") in out
        refused = [line for line in out.splitlines() if "169.254.169.254" in line]
        assert len(refused) == 1 and "link-local" in refused[0]  # one line, and the debate went on
        assert [r["path"] for r in web.requests] == ["/pricing"]

        expected = [("S1", "p.1"), ("S1", "p.2"), ("S2", "§1"), ("S2", "§2"), ("S3", "§1"), ("S3", "§2")]
        judges = [r for r in srv.requests if is_judge(r)]
        debaters = [r for r in srv.requests if not is_judge(r) and "Summarize" not in r.last_user]
        assert judges and len({r.api for r in debaters}) == 2
        for record in [*debaters, *judges]:
            prompt = record.last_user
            assert source_anchors(prompt) == expected, record.model
            assert "| Cost: two engineers for one quarter." in prompt
            assert "| The team plan stops at 50 seats; past that the enterprise plan is required." in prompt
            assert "Cookie banner" not in prompt and "Login" not in prompt

        code, out, err = await debate(tmp_path, "history", "--json", env=env)
        debate_id = json.loads(out)["debates"][0]["id"]
        code, out, err = await debate(tmp_path, "export", debate_id, "--format", "json", env=env)
        assert code == 0, err
        sources = json.loads(out)["sources"]
        assert [(s["label"], s["kind"], s["title"]) for s in sources] == [
            ("S1", "pdf", "RFC 12"), ("S2", "markdown", "Incident notes"), ("S3", "html", "Plans")]
        assert sources[0]["size"] == (tmp_path / "rfc.pdf").stat().st_size and len(sources[0]["sha256"]) == 64
        assert sources[2]["origin"] == web.url("/pricing") and "12 dollars a seat" in sources[2]["text"]
        assert "brief" not in json.loads(out)["spec"]
        code, out, _ = await debate(tmp_path, "export", debate_id, "--format", "json", "--no-sources-text", env=env)
        assert all("text" not in s for s in json.loads(out)["sources"]) and "12 dollars" not in out
        code, out, _ = await debate(tmp_path, "export", debate_id, "--format", "md", env=env)
        assert "## Brief" in out and "- S1 · RFC 12 (pdf" in out
        code, out, _ = await debate(tmp_path, "show", debate_id, env=env)
        assert "Brief" in out and "S3 · Plans (html" in out

        # `continue` keeps the brief and may add a source; `rematch` keeps it
        (tmp_path / "followup.txt").write_text("Update: the lock is fixed as of June.")
        before = len(srv.requests)
        code, out, err = await debate(tmp_path, "continue", debate_id, "--context", "followup.txt", env=env)
        assert code == 0, err
        for record in srv.requests[before:]:
            if not is_judge(record) and "Summarize" in record.last_user:
                continue
            assert source_anchors(record.last_user)[-1] == ("S4", "§1"), record.last_user[:300]
        code, out, _ = await debate(tmp_path, "export", debate_id, "--format", "json", env=env)
        assert [s["label"] for s in json.loads(out)["sources"]] == ["S1", "S2", "S3", "S4"]

        before = len(srv.requests)
        code, out, err = await debate(tmp_path, "rematch", debate_id, "--json", env=env)
        assert code == 0, err
        assert [s["label"] for s in json.loads(out)["sources"]] == ["S1", "S2", "S3", "S4"]
        assert all(len(source_anchors(r.last_user)) == 7 for r in srv.requests[before:] if is_judge(r))


async def test_a_bad_context_file_is_bad_usage_before_anything_runs(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        env = two_providers(tmp_path, srv)
        code, out, err = await debate(tmp_path, "run", "Topic?", "--context", "missing.pdf", env=env)
        assert code == 2 and out == ""
        assert err.startswith("debate: --context missing.pdf:") and len(err.splitlines()) == 1
        code, _, err = await debate(tmp_path, "run", "Topic?", "--context", "slides.pptx", env=env)
        assert code == 2 and "not a file kind the brief reads" in err
        assert srv.requests == []
