"""One more round after a verdict (`continue`): every debater answers the verdict in parallel, then the
judge rules again over the whole transcript, saying whether the winner changed and why.

The engine runs it (`Engine.continue_debate`, orchestrator/debate/engine.py) on a DebateRun that holds
the earlier turns already: `play` is the round, shaped like a format's run, and `settle_change` fills in
the new verdict's `changed` from the winners when the judge did not say it (or said it wrongly). The
debaters read the transcript so far, cut to its latest rounds when it is long (the earlier verdict sums
up the rest), the earlier verdict, and the audience's notes, the new facts among them.
"""

from __future__ import annotations

import logging

from orchestrator.debate.formats.base import FormatResult, render_turns
from orchestrator.debate.formats.council import continue_council
from orchestrator.debate.quoting import quote_block, with_quoting_rules
from orchestrator.debate.run import DebateRun
from orchestrator.models import Seat, Turn, Verdict
from orchestrator.prompts import render

log = logging.getLogger(__name__)

KIND = "continuation"
TITLE = "Continued"
HISTORY_CHARS = 24_000  # the transcript a continuation turn reads, at most (whole rounds, latest first)


def debating_seats(run: DebateRun, history: list[Turn]) -> list[Seat]:
    """The seats that took part (a format may seat fewer than the spec has), in seating order."""
    spoke = {t.seat for t in history if t.status == "ok"}
    return [s for s in run.spec.seats if s.label in spoke] or list(run.spec.seats)


def bounded_history(turns: list[Turn], limit: int = HISTORY_CHARS) -> str:
    """The transcript as the formats show it: whole, or its latest whole rounds that fit in `limit`."""
    ok = [t for t in turns if t.status == "ok"]
    if not ok:
        return ""
    rounds = sorted({t.round for t in ok})
    kept: list[int] = []
    size = 0
    for round_no in reversed(rounds):
        text = render_turns([t for t in ok if t.round == round_no])
        if kept and size + len(text) > limit:
            break
        kept.append(round_no)
        size += len(text)
    shown = render_turns([t for t in ok if t.round >= min(kept)])
    if min(kept) == rounds[0]:
        return render("history_full", transcript=shown)
    last = min(kept) - 1
    return render("history_cut", omitted="round 1 is" if last == 1 else f"rounds 1–{last} are", transcript=shown)


def _verdict_values(run: DebateRun, previous: Verdict) -> dict[str, str]:
    try:
        role = run.spec.seat(previous.winner).role
    except KeyError:
        role = "debater"
    outcome = ("No clear winner (the judging did not agree on a side)" if previous.no_clear_winner else
               f"Debater {previous.winner} ({role})")
    verdict = (f"Winner: {outcome}\n"
               f"Reasoning: {previous.reasoning.strip() or '(none given)'}\n"
               f"Recommendation: {previous.recommendation.strip() or '(none given)'}")
    return {"winner": previous.winner, "verdict": quote_block("verdict", verdict)}


async def play(run: DebateRun, previous: Verdict, rounds_done: int) -> FormatResult:
    """The continued round (round `rounds_done` + 1), every debating seat at once; the judge's context.
    A council ranks its answers again and its chair writes a new synthesis instead (formats/council.py)."""
    if run.spec.format == "council":
        return await continue_council(run, previous, rounds_done)
    history = list(run.transcript)
    round_no = rounds_done + 1
    seats = debating_seats(run, history)
    await run.round_started(round_no, round_no, TITLE)
    values = _verdict_values(run, previous)
    shown_history = bounded_history(history)
    turns = await run.steps.gather(*(
        run.turn(seat, round_no, KIND, with_quoting_rules(render("debater_rules", label=seat.label, role=seat.role)),
                 render("continue_turn", topic=run.spec.topic, history=shown_history, rounds_done=rounds_done,
                        round=round_no, label=seat.label, role=seat.role, **values))
        for seat in seats
    ))
    answered = [t for t in turns if t.status == "ok"]
    if not answered:
        errors = "; ".join(f"Debater {t.seat} ({t.model}): {t.error}" for t in turns)
        return FormatResult(rounds_done, abort=f"Debate failed: every debater failed in the continued round, so the "
                                               f"earlier verdict stands. {errors}", rounds_planned=round_no)
    for turn in (t for t in turns if t.status != "ok"):
        await run.notice(f"Debater {turn.seat} ({turn.model}) failed in the continued round: {turn.error}. "
                         "The new verdict weighs the others' answers.", "warning")
    await run.round_completed(round_no, round_no)
    context = render("continue_judge_context", rounds_done=rounds_done, round=round_no, **values)
    stances = {s.seat: s.stance for s in previous.scores if s.stance} if run.spec.format == "stances" else {}
    return FormatResult(round_no, judge_context=context, rounds_planned=round_no, descriptions=stances or None)


def settle_change(verdict: Verdict, previous: Verdict) -> Verdict:
    """`changed` is whether the winner differs from the earlier verdict's: the judge's own answer is kept
    when it says so, derived from the winners when it is missing or contradicts them."""
    changed = verdict.clear_winner != previous.clear_winner
    note = verdict.change_note.strip()
    if verdict.changed is not None and verdict.changed != changed:  # its note argues the wrong case
        log.warning("the continued verdict's judge said changed=%s but the winners say %s", verdict.changed, changed)
        note = ""
    if not note:
        before, after = previous.clear_winner or "no clear winner", verdict.clear_winner or "no clear winner"
        note = (f"The outcome changed from {before} to {after}." if changed and not (previous.clear_winner and
                                                                                   verdict.clear_winner)
                else f"The winner changed from {before} to {after}." if changed
                else "Still no clear winner." if verdict.no_clear_winner else f"{after} still wins.")
    return verdict.model_copy(update={"changed": changed, "change_note": note})
