"""Reading sources into a brief: PDF pages (pypdf in a limited child process), a web page's main text,
Markdown and text, each with its anchors, size and sha256; the brief's limits, each named when it bites;
secrets redacted. PDFs are written by the test (tests/pdf_maker.py); URLs come from a loopback server."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from orchestrator.brief.addresses import AllowedHosts
from orchestrator.brief.extract import ExtractError, PdfLimits, extract
from orchestrator.brief.fetch import Fetcher, FetchPolicy
from orchestrator.brief.gather import BriefInputError, BriefLimits, Material, gather, material_for
from tests.fakes.web_source import SourceServer
from tests.pdf_maker import make_pdf

KEY = "sk-proj-Q7vX2mR9tL4pW8nZ3kB6yH1c"
PAGE = b"""<html><head><title>Vendor pricing</title></head><body><nav>Home | Products | Login</nav>
<article><h1>Plans</h1><p>The basic plan costs 10 dollars a month per seat and covers a small team.</p>
<h2>Enterprise</h2><p>Enterprise adds single sign-on, audit logs and a named support engineer.</p></article>
<footer>Copyright and cookie banner text</footer></body></html>"""


@pytest.mark.slow
async def test_a_pdf_is_read_page_by_page_with_page_anchors() -> None:
    data = make_pdf(["Incident summary\nThe cache fell over.", "", "Root cause\nA TTL of zero."], title="INC-42")
    got = await extract(data, "pdf", name="inc.pdf")
    assert got.title == "INC-42"
    assert [s.anchor for s in got.sections] == ["p.1", "p.3"]  # the empty page has no section, numbers hold
    assert "TTL of zero" in got.text[got.sections[1].start:got.sections[1].end]


@pytest.mark.slow
async def test_a_pdf_past_the_page_limit_is_read_to_it_and_says_so() -> None:
    data = make_pdf([f"page {n} words" for n in range(1, 6)])
    got = await extract(data, "pdf", name="long.pdf", pdf=PdfLimits(pages=3))
    assert [s.anchor for s in got.sections] == ["p.1", "p.2", "p.3"]
    assert got.note == "read the first 3 of 5 pages"


@pytest.mark.slow
async def test_a_pdf_that_needs_more_memory_than_allowed_is_refused() -> None:
    with pytest.raises(ExtractError, match="needs more than 20 MiB"):
        await extract(make_pdf(["x"]), "pdf", pdf=PdfLimits(memory_bytes=20 * 2**20))


@pytest.mark.slow
async def test_a_pdf_read_past_its_time_is_killed() -> None:
    """The product's limit is 20 s; a limit shorter than the child's start-up shows the kill path."""
    assert PdfLimits().timeout_s == 20 and PdfLimits().pages == 200 and PdfLimits().memory_bytes == 512 * 2**20
    with pytest.raises(ExtractError, match=r"took longer than 0\.01 s"):
        await extract(make_pdf(["x"]), "pdf", pdf=PdfLimits(timeout_s=0.01))


@pytest.mark.slow
async def test_a_broken_pdf_is_one_line() -> None:
    with pytest.raises(ExtractError, match=r"^not a readable PDF \(\w+"):
        await extract(b"%PDF-1.4\nthis is not a pdf at all", "pdf")


async def test_html_gives_its_main_text_with_heading_sections() -> None:
    got = await extract(PAGE, "html", name="https://vendor.example/pricing")
    assert got.title == "Vendor pricing" or got.title == "Plans"
    assert "10 dollars a month" in got.text and "Login" not in got.text and "cookie banner" not in got.text
    assert [(s.anchor, s.heading) for s in got.sections] == [("§1", "Plans"), ("§2", "Enterprise")]


async def test_markdown_and_text_are_read_as_they_are() -> None:
    markdown = "# Design\nIntro.\n\n## Storage\nSQLite first.\n\n## Risks\nNone known."
    got = await extract(markdown.encode(), "markdown", name="design.md")
    assert got.title == "Design" and got.text == markdown
    assert [s.heading for s in got.sections] == ["Design", "Storage", "Risks"]
    long_text = "\n\n".join(f"Paragraph {n}. " + "words " * 100 for n in range(20))
    got = await extract(long_text.encode(), "text", name="notes.txt")
    assert len(got.sections) > 3 and all(s.end - s.start <= 3000 for s in got.sections)
    assert got.text[got.sections[1].start:].startswith("Paragraph")


@pytest.mark.slow
async def test_gather_numbers_sources_and_keeps_size_and_sha256(tmp_path: Path) -> None:
    pdf = make_pdf(["Page one text", "Page two text"], title="Spec")
    (tmp_path / "spec.pdf").write_bytes(pdf)
    (tmp_path / "notes.md").write_text(f"# Notes\nThe deploy key is {KEY} do not share.\n")
    async with SourceServer() as web:
        web.pages["/pricing"] = ("text/html; charset=utf-8", PAGE)
        fetcher = Fetcher(FetchPolicy(allowed=AllowedHosts.parse(web.allow_hosts)))
        materials = [material_for(str(tmp_path / "spec.pdf")), material_for(str(tmp_path / "notes.md")),
                     material_for(web.url("/pricing")), material_for("http://169.254.169.254/latest/")]
        brief = await gather(materials, fetcher=fetcher)
    assert [(s.label, s.kind) for s in brief.sources] == [("S1", "pdf"), ("S2", "markdown"), ("S3", "html")]
    first = brief.sources[0]
    assert first.size == len(pdf) and first.sha256 == hashlib.sha256(pdf).hexdigest() and first.title == "Spec"
    assert brief.source("s1") is first and first.section("p 2") is not None
    assert KEY not in brief.sources[1].text and "[redacted]" in brief.sources[1].text
    assert brief.sources[2].url == web.url("/pricing")
    assert len(brief.notes) == 1 and "link-local" in brief.notes[0] and "\n" not in brief.notes[0]


async def test_each_limit_is_named_when_it_bites() -> None:
    texts = [Material.from_text(f"message {n} " * 20, kind="message", origin=f"m{n}") for n in range(4)]
    brief = await gather(texts, limits=BriefLimits(max_sources=2))
    assert len(brief.sources) == 2 and len(brief.notes) == 2
    assert all("DEBATE_BRIEF_MAX_SOURCES" in n for n in brief.notes)

    long = "\n\n".join(f"## Part {n}\n" + "text " * 200 for n in range(10))
    brief = await gather([Material.from_text(long, kind="thread", origin="t")], limits=BriefLimits(max_chars=4000))
    assert 0 < brief.chars <= 4000 and "DEBATE_BRIEF_MAX_CHARS" in brief.notes[0]
    assert brief.sources[0].sections[-1].end == len(brief.sources[0].text)  # cut at a section boundary

    big = Material(origin="big.txt", name="big.txt", data=b"x" * 2000)
    brief = await gather([big], limits=BriefLimits(max_file_bytes=1000))
    assert not brief.sources and "MB a file may be" in brief.notes[0]


def test_a_bad_context_argument_is_bad_usage(tmp_path: Path) -> None:
    with pytest.raises(BriefInputError, match=r"(?i)no such file"):
        material_for(str(tmp_path / "missing.md"))
    (tmp_path / "a.docx").write_bytes(b"x")
    with pytest.raises(BriefInputError, match="not a file kind the brief reads"):
        material_for(str(tmp_path / "a.docx"))
    (tmp_path / "big.txt").write_bytes(b"x" * 3000)
    with pytest.raises(BriefInputError, match="MB a file may be"):
        Material.from_path(tmp_path / "big.txt", max_bytes=1000)
