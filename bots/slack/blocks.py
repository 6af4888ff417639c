"""Block Kit and mrkdwn for a debate's messages: root, turn headers, progress, verdict, quote.

Model prose (turns, notices, the verdict's reasoning and recommendation) goes in `markdown` blocks as
the model wrote it (`bots.slack.markdown`), with a plain-text `text` for notifications; the rest
(headers, labels, buttons, context lines) stays Block Kit and mrkdwn.

The root carries an Interject button while the debate runs (and says which debate it replays, for a
rematch); the verdict carries the vote, quote and Continue buttons, and a continuation's verdict says
whether the winner changed and why. Every piece of user or model text passes through `safe()`
(neutralized, then cut to the limit of the block it lands in); fixed labels are ours. Limits: section
text 3,000, button text 75, context element 2,000 (we keep far under), 50 blocks a message.
"""

from __future__ import annotations

from typing import Any

from bots.slack.markdown import fit_markdown, markdown_block, neutralize_markdown, plain_text, safe_mrkdwn
from bots.thread.text import neutralize_slack, truncate
from orchestrator.brief.models import size_text
from orchestrator.events import Notice, RoundStarted, TurnStarted
from orchestrator.jury_text import dissent_lines, juror_lines
from orchestrator.log import Tally
from orchestrator.models import DebateSpec, Outcome, Verdict

Block = dict[str, Any]

SECTION_LIMIT = 3000
BUTTON_LIMIT = 75
CONTEXT_LIMIT = 1900
TEXT_FALLBACK_LIMIT = 3000  # a message's `text` beside its blocks: what a notification shows
VOTE_ACTION = "debate_vote"
QUOTE_ACTION = "quote_recommendation"
INTERJECT_ACTION = "debate_interject"
CONTINUE_ACTION = "debate_continue"
PAGE_ACTION = "debate_page"  # a link button: Slack opens the page and sends the click, which is only acked
STATUS_ICON = {"running": ":hourglass_flowing_sand:", "completed": ":white_check_mark:",
               "failed": ":x:", "cancelled": ":no_entry_sign:", "pending": ":hourglass:"}


def safe(text: str, limit: int = SECTION_LIMIT) -> str:
    """Model or user text, made harmless and short enough for `limit`, for mrkdwn shown as written."""
    return truncate(neutralize_slack(text), limit)


def prose(text: str, limit: int) -> str:
    """Model prose for a `markdown` block: its Markdown kept, cut to `limit`, made inert. Cut first:
    a cut through a code span would leave its backtick open, and whatever followed it, a link made
    inert only inside code included, would render live (a shorter cut when making it inert lengthened it)."""
    budget = limit
    while True:
        shown = neutralize_markdown(truncate(text, budget))
        if len(shown) <= limit or budget <= 1:
            return shown
        budget -= len(shown) - limit


def label(text: str, limit: int) -> str:
    """A name (a seat, a model) inside our own Markdown: inert, and with no backtick that could open a
    code span across the pieces around it."""
    return prose(text.replace("`", "'"), limit)


def section(text: str, block_id: str | None = None) -> Block:
    block: Block = {"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, SECTION_LIMIT)}}
    if block_id:
        block["block_id"] = block_id
    return block


def context(text: str, block_id: str | None = None) -> Block:
    block: Block = {"type": "context", "elements": [{"type": "mrkdwn", "text": truncate(text, CONTEXT_LIMIT)}]}
    if block_id:
        block["block_id"] = block_id
    return block


def button(label: str, action_id: str, value: str, style: str | None = None) -> Block:
    element: Block = {
        "type": "button",
        "text": {"type": "plain_text", "text": truncate(label, BUTTON_LIMIT), "emoji": True},
        "action_id": action_id,
        "value": value,
    }
    if style:
        element["style"] = style
    return element


def page_button(page: str) -> Block:
    """The debate page's link (bots/page): a button that opens it; its click is only acked."""
    return {"type": "button", "text": {"type": "plain_text", "text": "Open the debate page"}, "url": page,
            "action_id": PAGE_ACTION}


def seat_line(spec: DebateSpec) -> str:
    seats = " · ".join(f"*{s.label}* {s.role} `{safe(s.model, 80)}`" for s in spec.seats)
    return f"{seats} · judge `{safe(spec.judge, 80)}`"


def debate_block_id(debate_id: str, part: str) -> str:
    """Block ids carry the debate id, so a shortcut on any of our messages finds its debate."""
    return f"debate:{debate_id}:{part}"


def root_message(spec: DebateSpec, status: str, detail: str = "", page: str | None = None) -> tuple[str, list[Block]]:
    """The channel message every turn is threaded under; `page`: the debate page's link, when there is one."""
    icon = STATUS_ICON.get(status, "")
    status_text = f"{icon} *{status}*" + (f" — {safe(detail, 600)}" if detail else "")
    blocks = [
        section(f":speech_balloon: *Debate:* {safe(spec.topic, 2500)}", debate_block_id(spec.id, "root")),
        context(f"{spec.format} · {spec.rounds} round{'s' if spec.rounds != 1 else ''} · effort {spec.effort}"
                f" · id `{spec.id}`"),
        context(seat_line(spec)),
    ]
    if spec.brief.sources:
        blocks.append(context(brief_text(spec), debate_block_id(spec.id, "brief")))
    if spec.rematch_of:
        blocks.append(context(f":repeat: Rematch of `{safe(spec.rematch_of, 40)}`",
                              debate_block_id(spec.id, "rematch")))
    blocks.append(section(status_text, debate_block_id(spec.id, "status")))
    # Interject only while it runs: a note for a debate that ended would reach no prompt
    actions = [button("Interject", INTERJECT_ACTION, spec.id)] if status == "running" else []
    actions += [page_button(page)] if page else []
    if actions:
        blocks.append({"type": "actions", "block_id": debate_block_id(spec.id, "root-actions"), "elements": actions})
    text = f"Debate ({status}): {safe(spec.topic, 300)}"
    return text, blocks


def brief_text(spec: DebateSpec) -> str:
    """The brief's sources, one line each: label, title, kind, size, and the link of a fetched page."""
    lines = [":paperclip: *Brief*"]
    for source in spec.brief.sources:
        link = f" · <{link_target(source.url)}|link>" if (source.url or "").startswith(("http://", "https://")) else ""
        lines.append(f"{source.label} · {safe(source.title, 120)} ({source.kind}, {size_text(source.size)}){link}")
    return "\n".join(lines)


def link_target(url: str) -> str:
    """A URL inside `<…|…>`: the characters that would end it escaped."""
    return url.replace("|", "%7C").replace(">", "%3E").replace("<", "%3C").replace(" ", "%20")


def outcome_detail(outcome: Outcome, winner: str | None = None) -> str:
    parts = [f"{outcome.rounds_completed}/{outcome.rounds_planned} rounds"]
    if winner:
        parts.append(f"winner {winner}")
    parts.append(f"{outcome.input_tokens + outcome.output_tokens:,} tokens")
    if outcome.cost_usd is not None:
        parts.append(f"${outcome.cost_usd:.4f}")
    if outcome.error:
        parts.append(outcome.error)
    if outcome.warnings:
        parts.append(f"{len(outcome.warnings)} warning{'s' if len(outcome.warnings) != 1 else ''}")
    return " · ".join(parts)


def final_root(spec: DebateSpec, outcome: Outcome, verdict: Verdict | None = None,
               page: str | None = None) -> tuple[str, list[Block]]:
    """The root message once the debate has ended: its outcome and, with a verdict, the winner."""
    winner = winner_text(spec, verdict) if verdict else None
    return root_message(spec, outcome.status, outcome_detail(outcome, winner), page)


def turn_header(event: TurnStarted) -> str:
    """A turn's first line, in standard Markdown (its messages are markdown blocks)."""
    return (f"**{label(event.seat, 20)} · {label(event.role, 20)}** — {label(event.kind, 40)}, "
            f"round {event.round} · `{label(event.model, 80)}`")


def turn_message(chunk: str) -> tuple[str, list[Block]]:
    """One message of a turn: `chunk` (inert Markdown) in a markdown block, plain text for notifications."""
    return truncate(plain_text(chunk), TEXT_FALLBACK_LIMIT), [markdown_block(chunk)]


def round_status(event: RoundStarted) -> str:
    """A round's progress, for the root message's status (which makes it safe)."""
    title = f" — {event.title}" if event.title else ""
    return f"round {event.round} of {event.total}{title}"


def notice_line(event: Notice) -> tuple[str, list[Block]]:
    """A warning or note (an audience note too), as its Markdown in a markdown block."""
    icon = "⚠️" if event.level == "warning" else "ℹ️"  # emoji, not shortcodes: markdown text
    text = f"{icon} {prose(event.text, SECTION_LIMIT)}"
    return truncate(plain_text(text), TEXT_FALLBACK_LIMIT), [markdown_block(text)]


def _rating_label(key: str) -> str:
    return key.replace("_", " ").replace("-", " ").capitalize()


def _md_bullets(title: str, items: tuple[str, ...], limit: int = 900) -> str | None:
    if not items:
        return None
    lines = [f"**{title}**"]
    for item in items[:8]:  # whole points only: a cut through one could leave a code span open
        line = f"- {prose(item, 300)}"
        if sum(len(x) + 1 for x in lines) + len(line) > limit:
            break
        lines.append(line)
    return "\n".join(lines)


def winner_text(spec: DebateSpec, verdict: Verdict) -> str:
    if verdict.no_clear_winner:
        return "no clear winner"
    try:
        seat = spec.seat(verdict.winner)
    except KeyError:
        return safe(verdict.winner, 40)
    return f"{seat.label} ({seat.role}, `{safe(seat.model, 80)}`)"


def judge_and_team(spec: DebateSpec, verdict: Verdict, tally: Tally | None) -> str:
    """The judge's pick beside the team's side votes: "Judge: *A* · Team: 3–1 for B"."""
    labels = [s.label for s in spec.seats]
    team = tally.team_text(labels) if tally is not None else "no side votes yet"
    judge = "no clear winner" if verdict.no_clear_winner else safe(verdict.winner, 10)
    return f":scales: *Judge:* {judge} · *Team:* {safe(team, 100)}"


def change_line(verdict: Verdict) -> str:
    """What a continuation's verdict says of the one before it."""
    head = ":arrows_counterclockwise: *The winner changed.*" if verdict.changed else \
        ":heavy_check_mark: *The winner stands.*"
    return f"{head} {safe(verdict.change_note, 1500)}".strip()


def tally_text(spec: DebateSpec, tally: Tally | None) -> str:
    if tally is None or tally.total == 0:
        return ":ballot_box_with_ballot: No votes yet — agree or disagree with the recommendation below."
    parts = [f":+1: agree {tally.count('agree')}", f":-1: disagree {tally.count('disagree')}"]
    parts += [f"convinced by {s.label}: {tally.count(f'side:{s.label}')}" for s in spec.seats]
    return f":ballot_box_with_ballot: {tally.total} vote{'s' if tally.total != 1 else ''} · " + " · ".join(parts)


def vote_buttons(spec: DebateSpec, page: str | None = None) -> Block:
    elements = [
        button("Agree", f"{VOTE_ACTION}_agree", f"{spec.id}|agree", "primary"),
        button("Disagree", f"{VOTE_ACTION}_disagree", f"{spec.id}|disagree", "danger"),
    ]
    for seat in spec.seats:
        elements.append(button(f"Convinced by {seat.label} ({seat.role})", f"{VOTE_ACTION}_side_{seat.label}",
                               f"{spec.id}|side:{seat.label}"))
    elements.append(button("Quote", QUOTE_ACTION, spec.id))
    elements.append(button("Continue", CONTINUE_ACTION, spec.id))
    if page:
        elements.append(page_button(page))
    return {"type": "actions", "block_id": debate_block_id(spec.id, "actions"), "elements": elements}


def verdict_message(
    spec: DebateSpec, verdict: Verdict, tally: Tally | None = None, tokens: tuple[int, int] | None = None,
    page: str | None = None,
) -> tuple[str, list[Block]]:
    """The judge's verdict with vote and quote buttons; re-rendered whenever the tally changes."""
    winner = winner_text(spec, verdict)
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Verdict" if verdict.changed is None else
                                    "New verdict", "emoji": True}},
        section(":balance_scale: *No clear winner*" if verdict.no_clear_winner else f":trophy: *Winner:* {winner}",
                debate_block_id(spec.id, "verdict")),
    ]
    if verdict.changed is not None:
        blocks.append(section(change_line(verdict), debate_block_id(spec.id, "change")))
    blocks.append(section(judge_and_team(spec, verdict, tally), debate_block_id(spec.id, "judge-team")))
    confidence = verdict.confidence_note()
    if confidence:
        icon = ":warning:" if verdict.uncertain else ":white_check_mark:"
        blocks.append(context(f"{icon} {safe(confidence, CONTEXT_LIMIT - 20)}"))
    if verdict.family_note():
        blocks.append(context(f":information_source: {safe(verdict.family_note(), CONTEXT_LIMIT - 30)}"))
    evidence = _md_bullets("Decisive evidence", verdict.evidence, 2000)
    if evidence:
        blocks.append(markdown_block(evidence))
    if verdict.jury:
        jurors = "\n".join(f"- {prose(line, 300)}" for line in juror_lines(verdict))
        blocks.append(markdown_block(f"**Jury**\n{jurors}"))
        for title, reasoning in dissent_lines(verdict):
            blocks.append(markdown_block(f"**{prose(title, 80)}**\n{prose(reasoning or '—', 1200)}"))
    if verdict.split:
        for reading in verdict.readings:
            blocks.append(markdown_block(f"**{prose(reading.title, 80)}: {prose(reading.winner, 10)} wins**\n"
                                         f"{prose(reading.reasoning, 1200)}"))
    if verdict.consensus:
        blocks.append(section(f"*Consensus:* {safe(verdict.consensus, 100)}"))
    if verdict.recommendation:
        blocks.append(markdown_block(f"**Recommendation**\n{prose(verdict.recommendation, 2800)}"))
    if verdict.cruxes:
        blocks.append(markdown_block(cruxes_markdown(verdict)))
    if verdict.reasoning and not (verdict.split and verdict.readings):  # a split shows every pass's reasoning
        blocks.append(markdown_block(f"**Reasoning**\n{prose(verdict.reasoning, 2800)}"))
    if verdict.ratings:
        fields = [{"type": "mrkdwn", "text": f"*{safe(_rating_label(k), 100)}*\n{safe(str(v), 20)}"}
                  for k, v in list(verdict.ratings.items())[:10]]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "*Debate quality*"}, "fields": fields})
    for title, items in (("Agreements", verdict.agreements), ("Disagreements", verdict.disagreements),
                         ("Unresolved", verdict.unresolved)):
        text = _md_bullets(title, items)
        if text:
            blocks.append(markdown_block(text))
    for score in verdict.scores[:4]:
        blocks.append(context(f"*{safe(score.seat, 10)}* {score.score:g} — {safe(score.stance, 300)}"))
    if tokens is not None:
        blocks.append(context(f"Tokens: {tokens[0]:,} in · {tokens[1]:,} out · debate `{spec.id}`"))
    blocks.append(context(tally_text(spec, tally), debate_block_id(spec.id, "tally")))
    blocks.append(vote_buttons(spec, page))
    outcome = "No clear winner" if verdict.no_clear_winner else f"{winner} wins"
    text = plain_text(f"Verdict: {outcome}. {prose(verdict.recommendation, 2000)}")
    return truncate(text, TEXT_FALLBACK_LIMIT), fit_markdown(blocks[:50])


def cruxes_markdown(verdict: Verdict) -> str:
    """The verdict's cruxes, most decisive first, each with what would settle it (at most three, ~2k chars)."""
    lines = ["**Cruxes** (what the outcome turns on)"]
    for i, crux in enumerate(verdict.cruxes[:3], 1):
        settle = f" — *settled by:* {prose(crux.settle, 300)}" if crux.settle else ""
        lines.append(f"{i}. {prose(crux.disagreement, 300)}{settle}")
    return "\n".join(lines)


def quote_text(spec: DebateSpec, verdict: Verdict, link: str | None) -> str:
    """The recommendation as a quote, for the channel, with where it came from."""
    body = safe_mrkdwn(verdict.recommendation or verdict.reasoning or "(no recommendation)", 3000)
    quoted = "\n".join(f"> {line}" if line else ">" for line in body.splitlines())
    where = f"<{link}|the debate thread>" if link else f"debate `{spec.id}`"
    return truncate(f"{quoted}\n— recommendation from {where} on _{safe(spec.topic, 300)}_", 3900)
