"""Recall as Slack text and the App Home view: models, history, search results, one debate's summary
(with every verdict of a continued debate, its audience notes and its rematches side by side).

These are mrkdwn surfaces (ephemeral answers, App Home: no markdown blocks there), so a model's
recommendation goes through the one Markdown → mrkdwn converter (`bots.slack.markdown.safe_mrkdwn`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bots.slack.blocks import STATUS_ICON, Block, change_line, context, safe, section, tally_text, winner_text
from bots.slack.markdown import safe_mrkdwn
from bots.thread.text import truncate
from orchestrator.log import DebateRecord, DebateSummary, SearchHit, Tally
from orchestrator.policy import ChatPolicy
from orchestrator.providers.pricing import highest_price, price_for

HOME_LIMIT = 15
SHOWN_REMATCHES = 8  # the latest; with every verdict of a continued debate, `show` stays within one message
SHOW_LIMIT = 3900


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip() and line.strip() != "```")


def _link(text: str, url: str | None) -> str:
    return f"<{url}|{text}>" if url else text


def _price_note(model: str) -> str:
    if price_for(model) is not None:
        return ""
    highest = highest_price(model)
    return f" — no known price: counted at ${highest.output_per_mtok:g} per million output tokens"


def models_text(policy: ChatPolicy) -> str:
    """The models this workspace may use: only what the chat policy allows (never an unlisted `cli:` tool)."""
    offered, providers = policy.offered(), policy.open_providers()
    if not offered and not providers:
        return ("No model is available for chat debates on this server yet; the operator configures a provider "
                "and DEBATE_CHAT_MODELS.")
    lines = ["*Models you can use here*"]
    lines += [f"• `{safe(model, 100)}`" + _price_note(model) for model in offered]
    if providers:
        lines.append("Any model of " + ", ".join(f"`{p}:`" for p in providers) + " works too.")
    if providers or any(price_for(model) is None for model in offered):
        lines.append("A model with no known price counts at its vendor's highest known price against the spend "
                     "budgets.")
    settings = policy.settings
    defaults = [f"{name} `{value}`" for name, value in (
        ("proposer", settings.debate_proposer), ("challenger", settings.debate_challenger),
        ("judge", settings.debate_judge)) if value and value in offered]
    if defaults:
        lines.append("Defaults: " + " · ".join(defaults))
    lines.append("Pick seats with `--vs provider:model,provider:model` and the judge with `--judge provider:model`.")
    return "\n".join(lines)


def summary_line(summary: DebateSummary, url: str | None = None) -> str:
    icon = STATUS_ICON.get(summary.status, "")
    outcome = (f"winner {summary.winner}" if summary.winner else
               "no clear winner" if summary.confidence == "none" else summary.status)
    if summary.split:
        outcome += " (split)"
    votes = f" · {summary.votes} vote{'s' if summary.votes != 1 else ''}" if summary.votes else ""
    topic = _link(safe(summary.topic, 120), url)
    return f"{icon} {topic} — {outcome}{votes} · `{summary.id}` · {_when(summary.created_at)}"


def history_text(summaries: list[DebateSummary], links: dict[str, str | None]) -> str:
    if not summaries:
        return "No debates here yet. Start one with `/debate <topic>`."
    return "*Recent debates*\n" + "\n".join(summary_line(s, links.get(s.id)) for s in summaries)


def search_text(query: str, hits: list[SearchHit], links: dict[str, str | None]) -> str:
    if not hits:
        return f"Nothing found for “{safe(query, 200)}”."
    lines = [f"*{len(hits)} result{'s' if len(hits) != 1 else ''} for “{safe(query, 200)}”*"]
    for hit in hits:
        snippet = safe(hit.snippet, 300).replace("[", "*").replace("]", "*")
        topic = _link(safe(hit.topic, 120), links.get(hit.debate_id))
        lines.append(f"• {topic} (`{hit.debate_id}`, {hit.where}): {snippet}")
    return "\n".join(lines)


def _verdict_lines(record: DebateRecord) -> list[str]:
    """The one verdict, or every verdict of a continued debate, numbered, each saying if the winner changed."""
    spec = record.spec
    if spec is None or record.verdict is None:
        return []
    verdicts = record.verdicts or (record.verdict,)
    if len(verdicts) == 1:
        verdict = verdicts[0]
        lines = [f"*Winner:* {winner_text(spec, verdict)}" + (" — :warning: split verdict" if verdict.split else "")]
        if verdict.recommendation:
            lines.append(f"*Recommendation:* {safe_mrkdwn(verdict.recommendation, 1500)}")
        if verdict.cruxes:
            lines.append("*Cruxes:*\n" + "\n".join(safe_mrkdwn(line, 400) for line in verdict.crux_lines()))
        return lines
    lines = [f"*Verdicts* ({len(verdicts)}: continued {len(verdicts) - 1} time{'s' if len(verdicts) != 2 else ''})"]
    for number, verdict in enumerate(verdicts, 1):
        line = f"{number}. winner {winner_text(spec, verdict)}" + (" (split)" if verdict.split else "")
        if verdict.changed is not None:
            line += " — " + change_line(verdict)
        if verdict.recommendation:
            line += "\n" + safe_mrkdwn(verdict.recommendation, 600 if number == len(verdicts) else 300)
        lines.append(line)
    return lines


def _side_by_side(record: DebateRecord) -> list[str]:
    """This debate and each of its rematches on one line each: who argued, who won, what to do."""
    if not record.rematches:
        return []

    def line(debate_id: str, fmt: str, models: tuple[str, ...], winner: str | None, winner_model: str | None,
             recommendation: str | None, status: str) -> str:
        seats = " vs ".join(f"`{safe(m, 80)}`" for m in models) or "?"
        won = f"winner {safe(winner, 10)}" + (f" (`{safe(winner_model, 80)}`)" if winner_model else "") \
            if winner else status
        rec = f" — {_one_line(safe_mrkdwn(recommendation, 200))}" if recommendation else ""
        return f"• `{debate_id}` · {fmt} · {seats} — {won}{rec}"

    first = record.verdict
    winner_model = None
    if first is not None and (seat := record.seat(first.winner)) is not None:
        winner_model = seat.model
    lines = [f"*Rematches* ({len(record.rematches)}), side by side with this debate",
             line(record.id, record.format, tuple(s.model for s in record.seats), first.winner if first else None,
                  winner_model, first.recommendation if first else None, record.status)]
    lines += [line(r.id, r.format, r.models, r.winner, r.winner_model, r.recommendation, r.status)
              for r in record.rematches[-SHOWN_REMATCHES:]]
    if len(record.rematches) > SHOWN_REMATCHES:
        lines.append(f"… and {len(record.rematches) - SHOWN_REMATCHES} earlier (`/debate show <id>` of each)")
    return lines


def show_text(record: DebateRecord, url: str | None) -> str:
    lines = [
        f"{STATUS_ICON.get(record.status, '')} *{_link(safe(record.topic, 500), url)}*",
        f"`{record.id}` · {record.format} · {record.rounds_completed}/{record.rounds_planned} rounds · "
        f"{record.status} · {_when(record.created_at)}",
    ]
    if record.rematch_of:
        lines.append(f":repeat: Rematch of `{safe(record.rematch_of, 40)}`")
    if record.seats:
        lines.append(" · ".join(f"*{s.label}* {s.role} `{safe(s.model, 80)}`" for s in record.seats))
    if record.verdict is not None and record.spec is not None:
        lines += _verdict_lines(record)
        lines.append(tally_text(record.spec, record.tally))
    elif record.error:
        lines.append(f"*Error:* {safe(record.error, 500)}")
    if record.interjections:
        facts = sum(1 for note in record.interjections if note.kind == "facts")
        notes = len(record.interjections) - facts
        parts = [f"{notes} interjection{'s' if notes != 1 else ''}"] + ([f"{facts} with new facts"] if facts else [])
        lines.append(":speaking_head_in_silhouette: Audience: " + ", ".join(parts))
    lines += _side_by_side(record)
    tokens = record.input_tokens + record.output_tokens
    if tokens:
        lines.append(f"Tokens: {record.input_tokens:,} in · {record.output_tokens:,} out"
                     + (f" · ${record.cost_usd:.4f}" if record.cost_usd is not None else ""))
    return truncate("\n".join(lines), SHOW_LIMIT)


def usage_blocks(lines: list[str]) -> list[Block]:
    """An admin's spend on the App Home: a header and one line per window."""
    return [{"type": "header", "text": {"type": "plain_text", "text": "Model spend", "emoji": True}},
            section("\n".join(f"• {line}" for line in lines)), {"type": "divider"}]


def home_view(items: list[tuple[DebateSummary, Tally | None]], links: dict[str, str | None]) -> dict[str, Any]:
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Recent debates", "emoji": True}},
        context("Debates held in this workspace's public channels (a private channel's stay in it). "
                "Start one in any channel with `/debate <topic>` · `/debate help` for options."),
        {"type": "divider"},
    ]
    if not items:
        blocks.append(section("No debates in public channels yet."))
    for summary, tally in items[:HOME_LIMIT]:
        blocks.append(section(summary_line(summary, links.get(summary.id))))
        details = []
        if summary.recommendation:
            details.append(safe_mrkdwn(summary.recommendation, 400))
        if tally is not None and tally.total:
            counts = ", ".join(f"{k.removeprefix('side:')} {v}" for k, v in sorted(tally.counts.items()))
            details.append(f":ballot_box_with_ballot: {counts}")
        if details:
            blocks.append(context(" · ".join(details)))
    return {"type": "home", "blocks": blocks[:50]}
