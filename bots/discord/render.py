"""How a debate looks in Discord: the root message, one embed colour per seat, the verdict, the tally.

Pure functions from core models to `discord.Embed`; every piece of model or user text passes through
`neutralize_discord` and `truncate`, so no embed breaks Discord's limits (title 256, description 4,096,
field 1,024, 25 fields, 6,000 across a message's embeds). A verdict is one embed, or two when the judge's
agreements, disagreements and unresolved points do not fit beside the rest (`verdict_embeds`).
"""

from __future__ import annotations

from discord import Colour, Embed

from bots.thread.text import neutralize_discord, truncate
from orchestrator.brief.models import size_text
from orchestrator.events import TurnStarted
from orchestrator.jury_text import dissent_lines, juror_lines
from orchestrator.log import DebateRecord, Tally
from orchestrator.models import DebateSpec, Outcome, Seat, Verdict

SEAT_COLOURS = {"A": 0x3B82F6, "B": 0xF97316, "C": 0x22C55E, "D": 0xA855F7}
VERDICT_COLOUR = 0xEAB308
FAILED_COLOUR = 0xEF4444
THREAD_NAME_LIMIT = 100
EMBED_TOTAL_LIMIT = 6000
EMBED_FIELD_LIMIT = 25
FIELD_LIMIT = 1024
DESCRIPTION_LIMIT = 4096
VERDICT_BUDGET = EMBED_TOTAL_LIMIT - 100  # across a verdict's embeds: room for its Votes field to grow
POINTS_FLOOR = 1500  # what the judge's points keep, the recommendation shortened for it, when both are long
POINTS_TITLE = "🧭 Where the debate stands"
POINT_LIMIT = 500  # one agreement, disagreement or unresolved point
JUDGE_TEAM_FIELD = "Judge · Team"
RATING_NAMES = {
    "disagreement": "Genuine disagreement",
    "genuine_disagreement": "Genuine disagreement",
    "evidence": "Evidence quality",
    "evidence_quality": "Evidence quality",
    "challenge_depth": "Challenge depth",
    "depth": "Challenge depth",
}
STATUS_LABELS = {
    "completed": "✅ Finished",
    "failed": "❌ Failed",
    "cancelled": "⏹️ Stopped",
    "running": "⏳ Running",
    "pending": "⏳ Starting",
}


def safe(text: str, limit: int) -> str:
    return truncate(neutralize_discord(text), limit)


def thread_name(topic: str) -> str:
    """A thread title from the topic: one line, at most 100 characters."""
    one_line = " ".join(topic.split())
    return truncate(neutralize_discord(one_line), THREAD_NAME_LIMIT) or "Debate"


def seat_colour(label: str) -> Colour:
    return Colour(SEAT_COLOURS.get(label, 0x64748B))


def seat_title(seat: Seat) -> str:
    return f"{seat.label} · {seat.role} · {seat.model}"


def turn_header(event: TurnStarted) -> str:
    """The first line of a turn's text (the seat, role and model are in the embed's author line)."""
    kind = event.kind.replace("-", " ").replace("_", " ")
    return f"**Round {event.round} · {kind}**"


def root_embed(spec: DebateSpec, *, status: str, notes: list[str] | None = None) -> Embed:
    """The message the slash command answers with; its thread holds the debate."""
    embed = Embed(title=safe(f"Debate: {spec.topic}", 256), colour=Colour(0x64748B))
    seats = "\n".join(f"**{s.label}** {s.role}: `{s.model}`" for s in spec.seats)
    embed.description = safe(f"{seats}\n**Judge:** `{spec.judge}`", 2000)
    embed.add_field(name="Format", value=f"{spec.format} · {spec.rounds} round(s) · effort {spec.effort}")
    if spec.rematch_of:
        embed.add_field(name="🔁 Rematch", value=f"Rematch of `{safe(spec.rematch_of, 40)}`")
    if spec.brief.sources:
        embed.add_field(name="📎 Brief", value=brief_text(spec), inline=False)
    embed.add_field(name="Status", value=safe(status, 1024), inline=False)
    if notes:
        embed.add_field(name="Notes", value=safe("\n".join(notes), 1024), inline=False)
    embed.set_footer(text=f"Debate {spec.id} · /debate-stop {spec.id} to stop it")
    return embed


def brief_text(spec: DebateSpec) -> str:
    """The brief's sources, one line each (label, title, kind, size; a fetched page's link), within a field."""
    lines = []
    for source in spec.brief.sources:
        url = source.url if (source.url or "").startswith(("http://", "https://")) else ""
        link = f" · <{url.replace('>', '%3E').replace(' ', '%20')}>" if url else ""
        lines.append(f"{source.label} · {safe(source.title, 100)} ({source.kind}, {size_text(source.size)}){link}")
    return truncate("\n".join(lines), 1024)


def final_status(outcome: Outcome, verdict: Embed | None = None) -> str:
    """The root message's status once the debate has ended: how, then its verdict's title or why there is none."""
    label = STATUS_LABELS.get(outcome.status, outcome.status)
    if verdict is not None:
        return f"{label}: {verdict.title}"
    return f"{label}: {outcome.error or 'no verdict'}"


def _ratings(verdict: Verdict) -> str:
    parts = [f"{RATING_NAMES.get(k, k.replace('_', ' ').capitalize())}: **{v}**" for k, v in verdict.ratings.items()]
    return " · ".join(parts)


def _winner(spec: DebateSpec, verdict: Verdict) -> str:
    if verdict.no_clear_winner:
        return "no clear winner"
    try:
        seat = spec.seat(verdict.winner)
    except KeyError:
        return verdict.winner
    return f"{seat.label} ({seat.role}, {seat.model})"


def tally_text(tally: Tally, labels: tuple[str, ...]) -> str:
    if tally.total == 0:
        return "No votes yet. Use the buttons below; you can change your vote."
    parts = [f"👍 Agree {tally.count('agree')}", f"👎 Disagree {tally.count('disagree')}"]
    parts += [f"{label} {tally.count(f'side:{label}')}" for label in labels if tally.count(f"side:{label}")]
    return " · ".join(parts) + f" — {tally.total} vote(s)"


NO_CLEAR_WINNER = "no clear winner"


def judge_pick(verdict: Verdict) -> str:
    """What the judge-beside-team line names: the winner's label, or NO_CLEAR_WINNER."""
    return verdict.clear_winner or NO_CLEAR_WINNER


def judge_and_team(winner: str, tally: Tally, labels: tuple[str, ...]) -> str:
    """The judge's pick beside the team's side votes: "Judge: **A** · Team: 3–1 for B"."""
    shown = winner if winner == NO_CLEAR_WINNER else safe(winner, 10)
    return f"Judge: **{shown}** · Team: {safe(tally.team_text(labels), 100)}"


def change_title(verdict: Verdict) -> str:
    """What a continuation's verdict says of the one before it (its `changed` is set)."""
    return "🔄 The winner changed" if verdict.changed else "✔️ The winner stands"


def verdict_embed(spec: DebateSpec, verdict: Verdict, outcome: Outcome | None, tally: Tally) -> Embed:
    """The judge's verdict; a continuation's (`changed` set) is a "New verdict" saying what changed and why."""
    heading = "🏆 Verdict" if verdict.changed is None else "🏆 New verdict"
    outcome_text = "No clear winner" if verdict.no_clear_winner else f"{_winner(spec, verdict)} wins"
    embed = Embed(title=safe(f"{heading}: {outcome_text}", 256), colour=Colour(VERDICT_COLOUR))
    recommendation = verdict.recommendation or "The judge gave no recommendation."
    embed.description = safe(f"**Recommendation**\n{recommendation}", 2500)
    if verdict.changed is not None:
        embed.add_field(name=change_title(verdict), value=safe(verdict.change_note or "—", 1024), inline=False)
    labels = tuple(s.label for s in spec.seats)
    embed.add_field(name=JUDGE_TEAM_FIELD, value=judge_and_team(judge_pick(verdict), tally, labels), inline=False)
    confidence = verdict.confidence_note()
    if confidence:
        warn = verdict.uncertain
        embed.add_field(name="⚠️ Confidence" if warn else "Confidence", value=safe(confidence, 1024), inline=False)
    if verdict.family_note():
        embed.add_field(name="Judge's family", value=safe(verdict.family_note(), 1024), inline=False)
    if verdict.cruxes:
        embed.add_field(name="Cruxes", value=safe("\n".join(verdict.crux_lines()), 1024), inline=False)
    if verdict.evidence:
        embed.add_field(name="Decisive evidence", inline=False,
                        value=safe("\n".join(f"• {item}" for item in verdict.evidence), 900))
    if verdict.jury:
        embed.add_field(name="Jury", value=safe("\n".join(f"• {line}" for line in juror_lines(verdict)), 1024),
                        inline=False)
        for title, reasoning in dissent_lines(verdict):
            embed.add_field(name=safe(title, 256), value=safe(reasoning or "—", 600), inline=False)
    if verdict.split and verdict.readings:  # every pass's reading, the deciding one's reasoning among them
        for reading in verdict.readings:
            embed.add_field(name=safe(f"{reading.title}: {reading.winner} wins", 256),
                            value=safe(reading.reasoning or "—", 600), inline=False)
    elif verdict.reasoning:
        embed.add_field(name="Why", value=safe(verdict.reasoning, 1024), inline=False)
    if verdict.ratings:
        embed.add_field(name="Debate quality", value=safe(_ratings(verdict), 1024), inline=False)
    if verdict.consensus:
        embed.add_field(name="Consensus", value=verdict.consensus)
    if outcome and outcome.warnings:
        embed.add_field(name="Warnings", value=safe("\n".join(outcome.warnings), 1024), inline=False)
    embed.add_field(name="Votes", value=tally_text(tally, tuple(s.label for s in spec.seats)), inline=False)
    embed.set_footer(text=_footer(spec, outcome))
    # every part fits its own limit, together they may not
    return _shrink_description(embed, len(embed) - VERDICT_BUDGET)


def verdict_embeds(spec: DebateSpec, verdict: Verdict, outcome: Outcome | None, tally: Tally) -> list[Embed]:
    """The verdict with the judge's agreements, disagreements and unresolved points: as fields of its embed
    when they fit whole, else in a second embed, each list cut at a whole point ("… and 3 more") to fit."""
    embed = verdict_embed(spec, verdict, outcome, tally)
    points = [(title, items) for title, items in (("Agreements", verdict.agreements),
                                                  ("Disagreements", verdict.disagreements),
                                                  ("Unresolved", verdict.unresolved)) if items]
    if not points:
        return [embed]
    whole = [(title, bullets(items)) for title, items in points]
    if (all(len(text) <= FIELD_LIMIT for _title, text in whole)
            and len(embed) + sum(len(title) + len(text) for title, text in whole) <= VERDICT_BUDGET
            and len(embed.fields) + len(whole) <= EMBED_FIELD_LIMIT):
        votes = len(embed.fields) - 1  # the Votes field stays last
        for offset, (title, text) in enumerate(whole):
            embed.insert_field_at(votes + offset, name=title, value=text, inline=False)
        return [embed]
    wanted = min(POINTS_FLOOR, len(points_text(points, DESCRIPTION_LIMIT)))
    embed = _shrink_description(embed, len(embed) + len(POINTS_TITLE) + wanted - VERDICT_BUDGET)
    text = points_text(points, min(DESCRIPTION_LIMIT, VERDICT_BUDGET - len(embed) - len(POINTS_TITLE)))
    if not text:
        return [embed]
    return [embed, Embed(title=POINTS_TITLE, colour=Colour(VERDICT_COLOUR), description=text)]


def bullets(items: tuple[str, ...], limit: int | None = None) -> str:
    """One "• point" line per item (each at most POINT_LIMIT), within `limit` if given: the last point that
    fits is cut with "…", and the points after it are counted ("… and 2 more")."""
    lines: list[str] = []
    used = -1  # no line break before the first line
    for index, item in enumerate(items):
        point = " ".join(item.split())
        if limit is None:
            lines.append("• " + safe(point, POINT_LIMIT))
            continue
        after = len(items) - index - 1
        room = limit - used - 1 - (len(f"\n… and {after} more") if after else 0)
        if room < 40 and lines:  # too little for a readable point: count it and the rest instead
            lines.append(f"… and {after + 1} more")
            break
        lines.append("• " + _cut_words(safe(point, POINT_LIMIT), max(room - 2, 1)))
        used += len(lines[-1]) + 1
    text = "\n".join(lines)
    return text if limit is None else truncate(text, limit)


def _cut_words(text: str, limit: int) -> str:
    """`text` within `limit`, cut after a whole word when one ends near the cut."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    words = head.rsplit(" ", 1)[0] if " " in head[-30:] else head
    return words.rstrip() + "…"


def points_text(points: list[tuple[str, tuple[str, ...]]], room: int) -> str:
    """The headed lists within `room` characters, shared fairly: a short list keeps all of its points and
    what it does not use goes to the longer ones."""
    headers = {title: f"**{title}**\n" for title, _items in points}
    available = room - 2 * (len(points) - 1) - sum(len(h) for h in headers.values())  # a blank line between
    need = {title: len(bullets(items)) for title, items in points}
    share: dict[str, int] = {}
    for count, title in enumerate(sorted(need, key=need.__getitem__)):
        share[title] = min(need[title], max(available, 0) // (len(need) - count))
        available -= share[title]
    sections = [headers[title] + bullets(items, share[title]) for title, items in points if share[title] >= 20]
    return truncate("\n\n".join(sections), room) if sections and room > 0 else ""


def _shrink_description(embed: Embed, overflow: int) -> Embed:
    """Take `overflow` characters off the embed: off the description (the recommendation) first, keeping
    its heading, then off the longest fields; the judge's pick and the Votes field are never cut."""
    if overflow > 0 and embed.description:
        before = len(embed.description)
        embed.description = truncate(embed.description, max(before - overflow, 40))
        overflow -= before - len(embed.description)
    longest = sorted(enumerate(embed.fields), key=lambda pair: -len(pair[1].value or ""))
    for index, field in longest:
        if overflow <= 0:
            break
        if field.name in (JUDGE_TEAM_FIELD, "Votes") or not field.value:
            continue
        value = truncate(field.value, max(len(field.value) - overflow, 20))
        overflow -= len(field.value) - len(value)
        embed.set_field_at(index, name=field.name or "", value=value, inline=bool(field.inline))
    return embed


def _footer(spec: DebateSpec, outcome: Outcome | None) -> str:
    text = f"Debate {spec.id}"
    if outcome is not None:
        text += f" · {outcome.rounds_completed}/{outcome.rounds_planned} rounds"
        text += f" · tokens {outcome.input_tokens:,} in / {outcome.output_tokens:,} out"
        if outcome.cost_usd is not None:
            text += f" · ${outcome.cost_usd:.4f}"
    return text


def with_tally(embed: Embed, tally: Tally, labels: tuple[str, ...], winner: str | None = None) -> Embed:
    """The verdict embed as it is on the message, with its Votes field replaced and, given the judge's
    `winner`, its judge-beside-team line."""
    updated = embed.copy()
    text = tally_text(tally, labels)
    if winner is not None:
        _set_field(updated, JUDGE_TEAM_FIELD, judge_and_team(winner, tally, labels))
    return _set_field(updated, "Votes", text)


def _set_field(embed: Embed, name: str, value: str) -> Embed:
    for index, embed_field in enumerate(embed.fields):
        if embed_field.name == name:
            return embed.set_field_at(index, name=name, value=value, inline=False)
    return embed.add_field(name=name, value=value, inline=False)


def ended_embed(outcome: Outcome) -> Embed:
    """Shown in the thread when a debate ends without a verdict."""
    title = STATUS_LABELS.get(outcome.status, outcome.status)
    embed = Embed(title=f"{title}: no verdict", colour=Colour(FAILED_COLOUR))
    embed.description = safe(outcome.error or "The debate ended before the judge could decide.", 2000)
    if outcome.warnings:
        embed.add_field(name="Warnings", value=safe("\n".join(outcome.warnings), 1024), inline=False)
    embed.set_footer(text=f"{outcome.rounds_completed}/{outcome.rounds_planned} rounds completed")
    return embed


def quote_embed(topic: str, recommendation: str, winner: str, link: str, quoted_by: str | None) -> Embed:
    embed = Embed(title=safe(f"💬 {topic}", 256), colour=Colour(VERDICT_COLOUR), url=link)
    embed.description = safe(recommendation or "The judge gave no recommendation.", 3500)
    embed.add_field(name="Winner", value=safe(winner, 256))
    embed.add_field(name="Full debate", value=f"[Open the thread]({link})")
    if quoted_by:
        embed.set_footer(text=safe(f"Quoted by {quoted_by}", 200))
    return embed


def embeds_size(embeds: list[Embed]) -> int:
    return sum(len(e) for e in embeds)


# ---- `/debate-show`: every verdict of a continued debate, its rematches, its audience


def verdicts_text(record: DebateRecord) -> str:
    """Every verdict, first to latest, numbered; each after the first says whether the winner changed and why."""
    lines = []
    for number, verdict in enumerate(record.verdicts or ((record.verdict,) if record.verdict else ()), 1):
        seat = record.seat(verdict.winner)
        line = (f"{number}. **no clear winner**" if verdict.no_clear_winner else
                f"{number}. winner **{safe(verdict.winner, 10)}**" + (f" (`{safe(seat.model, 80)}`)" if seat else ""))
        line += " · split" if verdict.split else ""
        if verdict.changed is not None:
            why = f": {safe(verdict.change_note, 300)}" if verdict.change_note else ""
            line += f" — {change_title(verdict)}{why}"
        lines.append(line)
    return truncate("\n".join(lines), 1024)


def _versus(debate_id: str, fmt: str, models: tuple[str, ...], winner: str | None, winner_model: str | None,
            status: str) -> str:
    seats = " vs ".join(f"`{safe(m, 60)}`" for m in models) or "?"
    if winner:
        won = f"winner **{safe(winner, 10)}**" + (f" (`{safe(winner_model, 60)}`)" if winner_model else "")
    else:
        won = STATUS_LABELS.get(status, status)
    return f"`{debate_id}` · {fmt} · {seats} — {won}"


def rematches_text(record: DebateRecord) -> str:
    """This debate and each of its rematches, one line each, side by side: who argued, who won."""
    first = record.verdict
    seat = record.seat(first.winner) if first else None
    lines = [_versus(record.id, record.format, tuple(s.model for s in record.seats), first.winner if first else None,
                     seat.model if seat else None, record.status)]
    lines += [_versus(r.id, r.format, r.models, r.winner, r.winner_model, r.status) for r in record.rematches]
    return truncate("\n".join(lines), 1024)


def audience_text(record: DebateRecord) -> str:
    facts = sum(1 for note in record.interjections if note.kind == "facts")
    notes = len(record.interjections) - facts
    parts = [f"{notes} interjection{'s' if notes != 1 else ''}"] if notes else []
    parts += [f"{facts} continuation{'s' if facts != 1 else ''} with new facts"] if facts else []
    return ", ".join(parts)


def config_embed(text: str, *, saved: bool = False) -> Embed:
    """A channel's debate settings (`bots.loop.config_text`), with how to change them in Discord."""
    lines = [line for line in text.splitlines() if "/debate config" not in line]  # Slack's syntax
    title = "Saved: this channel's debate settings" if saved else "This channel's debate settings"
    embed = Embed(title=title, colour=Colour(0x64748B), description=safe("\n".join(lines[1:] or lines), 3500))
    embed.set_footer(text="Members with Manage Messages change them with /debate-config and its options; "
                          "reset puts one back to the bot's default.")
    return embed
