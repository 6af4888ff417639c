"""Model and audience text as HTML for the page: Markdown, made inert.

Raw HTML in the text is escaped (markdown-it's `html` off), and links, images, autolinks and link
reference definitions are switched off, so `<script>`, `<img onerror=…>`, `[x](javascript:…)` and
`https://…` all render as the characters they are, as in the threads. What comes out holds only the
tags markdown-it makes itself (paragraphs, emphasis, code, lists, headings, quotes, tables).
"""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt
from markupsafe import Markup

INERT_RULES = ["link", "image", "autolink", "reference", "html_inline", "html_block"]
CACHED = 4096  # rendered texts kept: a logged turn never changes, and its page is read again and again


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").disable(INERT_RULES)


@lru_cache(maxsize=CACHED)
def render_markdown(text: str) -> Markup:
    """`text` as safe HTML (trusted by the templates: every character of `text` is escaped or markup)."""
    return Markup(_parser().render(text))  # the parser escapes all text and emits no raw HTML
