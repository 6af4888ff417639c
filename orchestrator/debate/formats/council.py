"""council: members answer alone, rank each other's answers anonymously, and a chair writes the answer.

Round plan, after llm-council's three stages (`spec.rounds` is not used here): (1) every member answers the question
at once, streamed, without seeing the others; (2) every member that answered ranks the others' answers anonymously
(letters drawn per ranker, its own answer never shown, model names taken out: council_ranking.py), with its reasons,
and the aggregate is posted as a small table; (3) the chair (the judge seat) writes the council's answer from the
surviving answers, the ranking and the reasons: the verdict's recommendation, which the team votes on and quotes; the
winner is the member ranked first.

A failed answer is dropped with a note; a ranking that fails or cannot be read (after one JSON-only reminder) is left
out with a note; a failed chair leaves the top-ranked answer as the recommendation, with a warning. Rankings run on a
silent copy of the run: the thread shows each rendered by seat label, never the raw ballot. `continue` ranks the
answers again with the new facts and writes a new synthesis (`continue_council`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from orchestrator.budgets import CHAIR_MAX_TOKENS
from orchestrator.debate.audience import with_audience
from orchestrator.debate.formats.base import FormatResult, combine_attempts
from orchestrator.debate.formats.council_ranking import (
    Ranking,
    RankingError,
    Standing,
    aggregate,
    ballot,
    orders,
    parse_ranking,
    ranking_from_turn,
    render_ranking,
    render_table,
    unnamed,
)
from orchestrator.debate.jsonparse import parse_error_metadata
from orchestrator.debate.quoting import quote_block, with_quoting_rules
from orchestrator.debate.run import DebateRun
from orchestrator.events import EventBus, TurnCompleted, TurnFailed, TurnStarted
from orchestrator.evidence.marks import check_marks
from orchestrator.models import StanceScore, Turn, Verdict
from orchestrator.prompts import render

log = logging.getLogger(__name__)

ROUNDS = 2  # answers, rankings; the synthesis is the verdict
ANSWER, RANKING, CONTINUED = "answer", "ranking", "continuation"
SYNTHESIS_MAX_TOKENS = CHAIR_MAX_TOKENS  # what the budgets price the chair at


class CouncilFormat:
    name = "council"

    async def run(self, run: DebateRun) -> FormatResult:
        answers = await _answers(run)
        if not answers:
            return FormatResult(0, abort="Debate failed: no council member could answer the question.",
                                rounds_planned=ROUNDS)
        # a budget spent in the answers round: the chair writes from the answers alone, unranked
        rankings = None if run.stopped_early else await _ranking_round(run, answers, 2, ROUNDS, "Rankings")
        verdict = await _synthesis(run, answers, rankings)
        return FormatResult(ROUNDS if rankings is not None else 1, verdict=verdict, rounds_planned=ROUNDS)


async def continue_council(run: DebateRun, previous: Verdict, rounds_done: int) -> FormatResult:
    """`continue`: one more ranking of the answers (the new facts reach every ballot) and a new synthesis."""
    round_no = rounds_done + 1
    answers = _latest_answers(run.transcript)
    if not answers:
        return FormatResult(rounds_done, abort="Debate failed: the council has no answers to rank again.",
                            rounds_planned=round_no)
    rankings = await _ranking_round(run, answers, round_no, round_no, "Continued", earlier=previous.recommendation)
    if rankings is None:
        rankings = _logged_rankings(run.transcript)  # one member left: the earlier ballots still stand
    verdict = await _synthesis(run, answers, rankings, earlier=previous.recommendation)
    return FormatResult(round_no, verdict=verdict, rounds_planned=round_no)


# ---- stage 1: answers


async def _answers(run: DebateRun) -> list[Turn]:
    members = list(run.spec.seats)
    await run.round_started(1, ROUNDS, "Answers")
    system = render("council_system", count=len(members))
    turns = await run.steps.gather(*(
        run.turn(seat, 1, ANSWER, system, render("council_answer", topic=run.spec.topic)) for seat in members
    ))
    for failed in (t for t in turns if t.status != "ok"):
        await run.notice(f"Member {failed.seat} ({failed.model}) could not answer: {failed.error}. It is dropped "
                         "from the council; the others' answers carry on.", "warning")
    answered = [t for t in turns if t.status == "ok"]
    if answered:
        await run.round_completed(1, ROUNDS)
    return answered


# ---- stage 2: rankings


async def _ranking_round(run: DebateRun, answers: list[Turn], round_no: int, total: int, title: str, *,
                         earlier: str = "") -> list[Ranking] | None:
    """Every answering member's ballot, at once; None when fewer than two members answered."""
    if len(answers) < 2:
        await run.notice(f"Only Member {answers[0].seat} answered, so there is nothing to rank: the chair writes "
                         "the final answer from its answer alone.", "warning")
        return None
    await run.round_started(round_no, total, title)
    await run.settled_evidence()  # each ballot reads the answers with their citations' checks
    silent = DebateRun(spec=run.spec, settings=run.settings, registry=run.registry, bus=EventBus(), stats=run.stats,
                       warnings=run.warnings, redact=run.redact, steps=run.steps, interjections=run.interjections)
    kind = RANKING if round_no == 2 else CONTINUED
    results = await run.steps.gather(*(
        _ballot_turn(run, silent, ranker, answers, round_no, kind, earlier) for ranker in answers
    ))
    rankings = [r for r in results if r is not None]
    if not rankings:
        await run.notice("No member's ranking could be used: the chair writes the final answer from the answers "
                         "alone, unranked.", "warning")
        return []
    await run.round_completed(round_no, total)
    members = [t.seat for t in answers]
    table = render_table(aggregate(rankings, members), rankings)
    await run.notice(f"Aggregate ranking of the answers (Borda points):\n{table}")
    return rankings


async def _ballot_turn(run: DebateRun, silent: DebateRun, ranker: Turn, answers: list[Turn], round_no: int,
                       kind: str, earlier: str) -> Ranking | None:
    """One member's ranking: the call, one JSON-only reminder when unreadable, then a rendered turn (or a note)."""
    seat = run.spec.seat(ranker.seat)
    others = [t for t in answers if t.seat != seat.label]
    letters = ballot(run.debate_id, round_no, seat.label, [t.seat for t in others])
    prompt = _ballot_prompt(run, letters, others, earlier)
    system = with_quoting_rules(render("council_rank_system"))
    await run.emit(TurnStarted(debate_id=run.debate_id, round=round_no, seat=seat.label, role=seat.role, kind=kind,
                               model=seat.model))
    attempts = [await silent.turn(seat, round_no, kind, system, prompt, record=False)]
    for attempt in range(2):
        last = attempts[-1]
        if last.status == "failed":
            failed = combine_attempts(attempts, status="failed", error=last.error)
            await run.emit(TurnFailed(debate_id=run.debate_id, turn=failed))
            await run.notice(f"Member {seat.label} ({seat.model}) could not rank the answers: {last.error}. "
                             "The ranking goes on without its ballot.", "warning")
            return None
        try:
            ranking = parse_ranking(last.text, letters, seat.label)
        except RankingError as exc:
            log.warning("debate %s: %s", run.debate_id, parse_error_metadata("council_ranking", exc.code))
            if attempt == 0:
                reminder = render("council_rank_reminder", problem=str(exc), letters=", ".join(letters))
                attempts.append(await silent.turn(seat, round_no, kind, system, f"{prompt}\n\n{reminder}",
                                                  record=False))
            continue
        turn = combine_attempts(attempts, text=render_ranking(ranking))
        shown = (await run.emit(TurnCompleted(debate_id=run.debate_id, turn=turn))).turn
        run.transcript.append(shown)
        await run.check_evidence(shown)  # a ballot's reasons may cite too
        return ranking
    await run.emit(TurnCompleted(debate_id=run.debate_id, turn=combine_attempts(
        attempts, status="empty", error="no readable ranking, even after a reminder")))
    await run.notice(f"Member {seat.label}'s ranking could not be read, even after a reminder; it is left out.",
                     "warning")
    return None


def _ballot_prompt(run: DebateRun, letters: dict[str, str], others: list[Turn], earlier: str) -> str:
    by_seat = {t.seat: t for t in others}
    models = [s.model for s in run.spec.seats]
    answers = "\n\n".join(_marked_block("answer", run, by_seat[label], unnamed(by_seat[label].text, models),
                                        letter=letter) for letter, label in letters.items())
    values = dict(topic=run.spec.topic, letters=", ".join(letters), answers=answers, count=len(letters),
                  evidence=_evidence_note(run))
    if earlier:
        return render("council_rank_again", synthesis=quote_block("final_answer", unnamed(earlier, models)),
                      **values)
    return render("council_rank", **values)


# ---- stage 3: the chair's synthesis


async def _synthesis(run: DebateRun, answers: list[Turn], rankings: list[Ranking] | None, *,
                     earlier: str = "") -> Verdict:
    members = [t.seat for t in answers]
    standings = aggregate(rankings or [], members)
    table = render_table(standings, rankings or []) if rankings else "(no rankings: the answers are unranked)"
    checks = await run.settled_evidence()
    answer_rounds = {t.round for t in answers}
    reasons = "\n\n".join(quote_block("ranking", text := render_ranking(r), check_marks(text, [
        c for c in checks if c.seat == r.ranker and c.round not in answer_rounds]), ranker=r.ranker)
        for r in rankings or [])
    user = render(
        "council_synthesis", topic=run.spec.topic, table=table, reasons=reasons or "(none)",
        answers="\n\n".join(_marked_block("answer", run, t, t.text, member=t.seat) for t in answers),
        evidence=_evidence_note(run),
        earlier=render("council_earlier_synthesis", synthesis=quote_block("final_answer", earlier)) if earlier else "",
    )
    text = await run.aux(run.spec.judge, with_quoting_rules(render("council_chair_system")),
                         with_audience(user, run.interjections), max_tokens=SYNTHESIS_MAX_TOKENS)
    top = next(t for t in answers if t.seat == standings[0].member)
    if not text or not text.strip():
        await run.notice(f"The chair ({run.spec.judge}) could not write the final answer, so Member {top.seat}'s "
                         "answer, ranked first, stands as the recommendation.", "warning", with_verdict=True)
        text = top.text
    return _verdict(standings, rankings or [], text.strip()).model_copy(
        update={"evidence_checks": tuple(checks)})


def _marked_block(tag: str, run: DebateRun, turn: Turn, text: str, **attributes: object) -> str:
    """`turn` quoted as `text`, each of its checked citations followed by our mark of what its check found."""
    own = [c for c in run.evidence_checks if c.seat == turn.seat and c.round == turn.round]
    return quote_block(tag, text, check_marks(text, own) if own else (), **attributes)


def _evidence_note(run: DebateRun) -> str:
    """How to read the marks, when there are any (the judges' note)."""
    return "\n" + render("council_evidence") + "\n" if run.evidence_checks else ""


def _verdict(standings: list[Standing], rankings: list[Ranking], synthesis: str) -> Verdict:
    first = standings[0]
    if rankings:
        reasoning = (f"The council ranked Member {first.member}'s answer first ({first.points} Borda points, "
                     f"first on {first.first_places} of {len(rankings)} ballots). The chair's synthesis draws on "
                     "every surviving answer.\n" + "\n".join(orders(rankings)))
    else:
        reasoning = f"No usable rankings: Member {first.member} is named first by seating order only."
    return Verdict(
        winner=first.member,
        reasoning=reasoning,
        recommendation=synthesis,
        scores=tuple(_score(i, s) for i, s in enumerate(standings, start=1)),
    )


def _score(place: int, standing: Standing) -> StanceScore:
    average = f", average place {standing.average_place:.1f}" if standing.average_place is not None else ""
    return StanceScore(seat=standing.member, stance=f"council place {place}{average}", score=standing.points)


# ---- a continuation reads the council back from its turns


def _latest_answers(turns: Sequence[Turn]) -> list[Turn]:
    latest: dict[str, Turn] = {}
    for turn in turns:
        if turn.kind == ANSWER and turn.status == "ok":
            latest[turn.seat] = turn
    return sorted(latest.values(), key=lambda t: t.seat)


def _logged_rankings(turns: Sequence[Turn]) -> list[Ranking]:
    last_round = max((t.round for t in turns if t.kind in (RANKING, CONTINUED)), default=0)
    read = (ranking_from_turn(t) for t in turns if t.kind in (RANKING, CONTINUED) and t.round == last_round)
    return [r for r in read if r is not None]
