"""consensus: two debaters work the same distilled question towards a shared answer.

Round plan (from the seed; `spec.rounds` is not used here):
1. one call to the judge model distills the user's text into one debatable question (the topic as written if that
   fails);
2. seed round: both debaters answer in parallel, without seeing each other;
3. exchange rounds 2..4: both answer in parallel, each reading its own and the other's latest response, stopping
   after the first round in which either carries CONSENSUS_REACHED (honoured only from round 2: in the seed nobody
   has read the other side yet), and after round 4 at the latest;
4. the debater with the most complete final status section (`elect_summarizer`) writes the joint summary, a visible
   turn of kind "summary"; the judge then rules with the status and summary as context.
A debater whose call fails leaves the exchange with a warning, and the other's responses carry the summary and the
verdict; both failing in the seed round aborts the debate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from orchestrator.debate.formats.base import FormatResult, render_turns
from orchestrator.debate.quoting import quote_block, quote_turn, with_quoting_rules
from orchestrator.debate.run import DebateRun
from orchestrator.models import Seat, Turn
from orchestrator.prompts import render

MAX_ROUNDS = 4
MARKER = "CONSENSUS_REACHED"
DISTILL_MAX_TOKENS = 200
MAX_QUESTION_CHARS = 600
STATUS_HEADINGS: tuple[str, ...] = ("consensus", "key trade-offs", "recommendation", "open questions")

ConsensusStatus = Literal["yes", "partial", "no"]

_HEADING = re.compile(
    r"^[ \t>]*(?:[-*][ \t]+)?(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*"
    r"(?P<name>consensus|key[ \t]+trade[- ]?offs?|recommendations?|open[ \t]+questions?)"
    r"[ \t]*(?:\*\*|__)?[ \t]*(?P<colon>:)?[ \t]*(?:\*\*|__)?[ \t]*(?P<rest>.*)$",
    re.IGNORECASE,
)
_STATUS_HEADER = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*status[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*$", re.IGNORECASE | re.MULTILINE
)
_ANY_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]+\S")
_NOTHING = re.compile(r"^(none|nothing|no\b|not yet|n/?a\b|tbd\b|-+$|—)", re.IGNORECASE)
_MARKUP = re.compile(r"^[\s>*_\-•·]+|[\s*_]+$")


def has_marker(text: str) -> bool:
    return MARKER in text


def _canonical(name: str) -> str:
    name = " ".join(name.lower().replace("tradeoff", "trade-off").replace("trade off", "trade-off").split())
    if name.startswith("key"):
        return "key trade-offs"
    if name.startswith("recommendation"):
        return "recommendation"
    if name.startswith("open"):
        return "open questions"
    return "consensus"


def parse_status(text: str) -> dict[str, str]:
    """The status section's four fields, heading → content (stripped; "" when present but empty).

    Only the text after the last "Status" header is read when there is one, so prose earlier in the
    response that happens to start a line with "Recommendation:" does not count. A field runs until
    the next recognised heading, any markdown heading, or the consensus marker; a repeated heading
    replaces the earlier one (the last status section wins).
    """
    headers = list(_STATUS_HEADER.finditer(text))
    if headers:
        text = text[headers[-1].end() :]
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.strip() == MARKER:
            current = None
            continue
        match = _HEADING.match(line)
        if match and (match["colon"] or not match["rest"].strip()):  # "Consensus: …" or a bare heading line
            current = _canonical(match["name"])
            fields[current] = [match["rest"]]
            continue
        if _ANY_HEADING.match(line):
            current = None
            continue
        if current is not None:
            fields[current].append(line)
    return {name: "\n".join(lines).replace(MARKER, "").strip() for name, lines in fields.items()}


@dataclass(frozen=True)
class Completeness:
    """How complete a status section is: headings with content, then the content's length."""

    filled: int
    length: int


def status_completeness(text: str) -> Completeness:
    fields = parse_status(text)
    contents = [fields.get(name, "") for name in STATUS_HEADINGS]
    filled = [c for c in contents if _MARKUP.sub("", c)]
    return Completeness(filled=len(filled), length=sum(len(c) for c in filled))


def elect_summarizer(finals: Sequence[tuple[str, str]]) -> str:
    """The seat whose final response has the most complete status section.

    Rule: most of the four headings (Consensus, Key trade-offs, Recommendation, Open questions)
    present with non-empty content; tie → the longer total content of those headings; tie → the
    earlier seat in seating order (the order of `finals`). `finals` is (seat label, final text) for
    every debater that has an ok response, in seating order; it must not be empty.
    """
    if not finals:
        raise ValueError("no final responses to elect a summarizer from")
    best_index = max(
        range(len(finals)),
        key=lambda i: (status_completeness(finals[i][1]).filled, status_completeness(finals[i][1]).length, -i),
    )
    return finals[best_index][0]


def _substantive(content: str) -> bool:
    body = _MARKUP.sub("", content.strip())
    return bool(body) and not _NOTHING.match(body)


def consensus_status(marker_reached: bool, finals: Sequence[str]) -> ConsensusStatus:
    """yes: a debater wrote CONSENSUS_REACHED (from round 2 on). partial: no marker, but both
    debaters' final status sections name something they agree on under "Consensus" (not "none",
    "not yet", "n/a" …). no: anything else, including a debate where only one debater was left."""
    if marker_reached:
        return "yes"
    if len(finals) >= 2 and all(_substantive(parse_status(text).get("consensus", "")) for text in finals):
        return "partial"
    return "no"


def clean_question(text: str | None, fallback: str) -> tuple[str, bool]:
    """The distilled question, or `fallback` when the answer is unusable; the flag says which."""
    if text:
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        question = lines[0] if lines else ""
        question = re.sub(r"^(?:\*\*|__)?(?:the\s+)?question(?:\*\*|__)?\s*:\s*", "", question, flags=re.IGNORECASE)
        question = question.strip().strip("\"“”'`*").strip()
        if 8 <= len(question) <= MAX_QUESTION_CHARS:
            return question, True
    return fallback, False


_STATUS_LINES: dict[ConsensusStatus, str] = {
    "yes": "yes — a debater wrote the agreement marker (round {round}), accepting the other's recommendation.",
    "partial": "partial — no agreement marker, but both final status sections name points of agreement.",
    "no": "no — the debaters did not reach a shared answer.",
}


@dataclass
class Exchange:
    """What the rounds produced: each debater's latest ok turn, and how the exchange ended."""

    latest: dict[str, Turn] = field(default_factory=dict)
    completed: int = 0
    marker_round: int | None = None
    seed_failures: list[Turn] = field(default_factory=list)


class ConsensusFormat:
    name = "consensus"

    async def run(self, run: DebateRun) -> FormatResult:
        seats = await _seats(run)
        question = await _distill(run)
        exchange = await _exchange(run, seats, question)
        if not exchange.latest:
            errors = "; ".join(f"Debater {t.seat} ({t.model}): {t.error}" for t in exchange.seed_failures)
            return FormatResult(
                0,
                abort=f"Both debaters failed in the seed round, so there is nothing to build a consensus on. {errors}",
            )
        finals = [(s.label, exchange.latest[s.label].text) for s in seats if s.label in exchange.latest]
        status = consensus_status(exchange.marker_round is not None, [text for _, text in finals])
        status_line = _STATUS_LINES[status].format(round=exchange.marker_round)
        await run.notice(f"Consensus: {status_line}")
        summary = await _summarize(run, seats, question, finals, status_line)
        context = render(
            "consensus_judge_context",
            question=question,
            status_line=status_line,
            summary=f"The joint summary, written by Debater {summary.seat}:\n{quote_block('summary', summary.text)}"
            if summary else "",
        )
        return FormatResult(exchange.completed, judge_context=context, consensus=status, rounds_planned=MAX_ROUNDS)


async def _exchange(run: DebateRun, seats: list[Seat], question: str) -> Exchange:
    """The seed round, then exchange rounds until the marker, a failure, or the cap."""
    result = Exchange()
    active = list(seats)
    for round_no in range(1, MAX_ROUNDS + 1):
        await run.round_started(round_no, MAX_ROUNDS, "Independent answers" if round_no == 1 else "Exchange")
        turns = await run.steps.gather(
            *(
                run.turn(
                    seat,
                    round_no,
                    "opening" if round_no == 1 else "response",
                    _system(seat),
                    _prompt(question, round_no, seat, active, result.latest),
                )
                for seat in active
            )
        )
        answered = [t for t in turns if t.status == "ok"]
        failed = [t for t in turns if t.status != "ok"]
        result.latest.update({t.seat: t for t in answered})
        active = [s for s in active if any(t.seat == s.label for t in answered)]
        if round_no == 1 and not answered:
            result.seed_failures = failed
            return result
        if failed:
            await _note_failures(run, round_no, failed, active)
        if not failed or round_no == 1:
            result.completed = round_no
            await run.round_completed(round_no, MAX_ROUNDS)
            if run.stopped_early:
                return result
        marked = [t for t in answered if round_no > 1 and has_marker(t.text)]
        if marked:
            who = " and ".join(f"Debater {t.seat}" for t in marked)
            await run.notice(f"{who} wrote {MARKER} in round {round_no}: the exchange stops here.")
            result.marker_round = round_no
            return result
        if len(active) < 2:
            return result
    await run.notice(
        f"No agreement marker after {MAX_ROUNDS} rounds, the most this format runs: the exchange stops here."
    )
    return result


async def _seats(run: DebateRun) -> list[Seat]:
    seats = list(run.spec.seats[:2])
    if len(run.spec.seats) > 2:
        left = ", ".join(s.label for s in run.spec.seats[2:])
        await run.notice(f"The consensus format seats two debaters: {left} sit(s) this one out.", "info")
    return seats


async def _distill(run: DebateRun) -> str:
    text = await run.aux(
        run.spec.judge,
        render("consensus_distill_system"),
        render("consensus_distill", topic=run.spec.topic),
        max_tokens=DISTILL_MAX_TOKENS, purpose="distill",
    )
    question, distilled = clean_question(text, run.spec.topic)
    if distilled:
        await run.notice(f"Question for the debaters: {question}")
    else:
        await run.notice("The question could not be distilled; the debaters get the topic as written.")
    return question


def _system(seat: Seat) -> str:
    return with_quoting_rules(render("consensus_system", label=seat.label))


def _prompt(question: str, round_no: int, seat: Seat, active: list[Seat], latest: dict[str, Turn]) -> str:
    if round_no == 1:
        return render("consensus_seed", question=question, rounds=MAX_ROUNDS)
    other = next(s for s in active if s.label != seat.label)
    return render(
        "consensus_round",
        question=question,
        round=round_no,
        rounds=MAX_ROUNDS,
        own=quote_turn(latest[seat.label]),
        other=quote_turn(latest[other.label]),
        other_label=other.label,
    )


async def _note_failures(run: DebateRun, round_no: int, failed: list[Turn], active: list[Seat]) -> None:
    survivor = " and ".join(f"Debater {s.label}" for s in active) or "none of the debaters"
    for turn in failed:
        if round_no == 1:
            text = (
                f"Debater {turn.seat} ({turn.model}) failed in the seed round: {turn.error}. "
                f"The debate continues with {survivor} alone, so no consensus is possible."
            )
        else:
            text = (
                f"Round {round_no} is incomplete: Debater {turn.seat} ({turn.model}) failed: {turn.error}. "
                f"The exchange ends; the summary uses {survivor}'s latest response and the verdict covers "
                f"rounds 1–{round_no - 1}."
            )
        await run.notice(text, "warning")


async def _summarize(
    run: DebateRun, seats: list[Seat], question: str, finals: list[tuple[str, str]], status_line: str
) -> Turn | None:
    label = elect_summarizer(finals)
    seat = next(s for s in seats if s.label == label)
    last_round = max(t.round for t in run.transcript)
    await run.notice(f"Debater {label} writes the summary: its final status section was the most complete.")
    turn = await run.turn(
        seat,
        last_round,
        "summary",
        with_quoting_rules(render("consensus_system_summary")),
        render(
            "consensus_summary",
            question=question,
            transcript=render_turns(list(run.transcript)),
            status_line=status_line,
        ),
        record=False,
    )
    if turn.status != "ok" or not turn.text.strip():
        await run.notice(
            f"The summary by Debater {label} could not be written ({turn.error or 'empty answer'}); "
            "the debaters' final status sections stand in for it.",
            "warning",
        )
        return None
    return turn
