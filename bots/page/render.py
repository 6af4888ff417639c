"""The page's HTML, from Jinja2 templates (templates/): every value is escaped by the templates, and
model and audience text goes through the `markdown` filter (markdown.py), which makes it inert."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from bots.page.markdown import render_markdown
from bots.page.view import PageView
from orchestrator.brief.models import size_text
from orchestrator.debate.confidence import RULES as CONFIDENCE_RULES

STATIC_PATH = "/page/static"


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _usd(amount: float) -> str:
    return f"${amount:.4f}" if amount < 1 else f"${amount:.2f}"


def _choice(choice: str) -> str:
    kind, _, value = choice.partition(":")
    return f"sided with {value}" if kind == "side" and value else choice


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=PackageLoader("bots.page", "templates"), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=False, lstrip_blocks=False)
    env.filters.update(markdown=render_markdown, when=_when, usd=_usd, choice=_choice, size=size_text)
    env.globals["confidence_rules"] = CONFIDENCE_RULES
    return env


def _seat_index(view: PageView) -> dict[str, int]:
    debaters = [seat.label for seat in view.record.seats if seat.role != "judge"]
    return {label: index % 4 for index, label in enumerate(debaters)}


def render_page(view: PageView, path: str, url: str | None) -> str:
    """The whole page; `path`: its own path (key included), `url`: its public address for link previews."""
    return environment().get_template("page.html").render(view=view, path=path, url=url, static=STATIC_PATH,
                                                          seat_index=_seat_index(view))


def render_main(view: PageView) -> str:
    """What the live page swaps in when the log changes: everything inside <main>."""
    return environment().get_template("main.html").render(view=view, seat_index=_seat_index(view))


def render_live_turn(view: PageView, key: str, seat: str, kind: str, model: str, text: str) -> str:
    """A turn still being written, as far as it has streamed."""
    return environment().get_template("live_turn.html").render(key=key, seat=seat, kind=kind, model=model, text=text,
                                                               seat_index=_seat_index(view))
