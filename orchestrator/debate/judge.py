"""The verdict: a fresh-context judge asked twice, the debaters' order swapped, the passes compared (or, with
`spec.judges`, a jury: orchestrator/debate/jury.py).

Both passes run concurrently, each seeing anonymous letters in presentation order, so a judge that favours whoever
comes first shows as a split verdict instead of a hidden bias. Each answer lists the decisive evidence before it
names a winner; a provider with a structured-output mode is held to that shape in one call (verdict_answer.py), any
other answer is read in whatever shape it came, and only one with no winner or recommendation is asked again. When
the passes disagree, and only then, a judge of a third family (`spec.tiebreak_judge`) decides; without one the
verdict is No clear winner, with both readings. Confidence comes from the rules of confidence.py, cruxes from
cruxes.py. Every pass also sees the audience's notes (quoted as untrusted text) and the format's context, relabelled
to its letters; a continued debate's judge is asked whether the winner changed (`changed`, `change_note`: read when
given, never demanded). Nothing here reads the clock or draws a random number: a resumed durable run replays the
same passes to the same verdict.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from pydantic import ValidationError

from orchestrator import tracing
from orchestrator.debate import confidence, cruxes
from orchestrator.debate.audience import audience_block
from orchestrator.debate.formats.base import relabel_text, render_turns
from orchestrator.debate.jsonparse import parse_error_metadata
from orchestrator.debate.quoting import one_line, with_quoting_rules
from orchestrator.debate.run import DebateRun
from orchestrator.debate.verdict_answer import one_text, read_answer, text_items, verdict_schema, winner_letter
from orchestrator.models import JudgeReading, PassKind, Seat, StanceScore, Turn, Verdict
from orchestrator.prompts import render
from orchestrator.providers import family
from orchestrator.providers.base import Message

log = logging.getLogger(__name__)

JUDGE_MAX_TOKENS = 3000
MAX_EVIDENCE = 8
EVIDENCE_CHARS = 400
_NON_ANSWER = re.compile(r"\b(both|tie|draw|neither|none|equal)\b", re.IGNORECASE)
_RATING_KEYS = ("genuine_disagreement", "evidence_quality", "challenge_depth")


class JudgeAnswerError(ValueError):
    def __init__(self, code: str, problem: str) -> None:
        super().__init__(problem)
        self.code = code


async def judge(
    run: DebateRun,
    turns: list[Turn],
    *,
    context: str = "",
    consensus: str | None = None,
    descriptions: dict[str, str] | None = None,
) -> Verdict | None:
    """Two concurrent passes in opposite orders, a tie-break pass when they split; None when no pass
    produced a usable verdict."""
    seats = judged_seats(run, turns)
    if not seats:
        return None
    descriptions = descriptions or {}
    shares = await _family_notice(run)
    orders: list[tuple[PassKind, list[Seat]]] = [("seated", seats), ("swapped", list(reversed(seats)))]
    results = await run.steps.gather(
        *(judge_pass(run, run.spec.judge, order, turns, context, descriptions, kind) for kind, order in orders)
    )
    passes = [r.verdict for r in results]
    judge_family = family(run.spec.judge)
    readings = [JudgeReading(kind=kind, winner=v.winner, reasoning=v.reasoning, family=judge_family)
                for (kind, _order), v in zip(orders, passes, strict=True) if v is not None]
    usable = [v for v in passes if v is not None]
    if not usable:
        return None
    decided = usable[0]
    split = len(usable) == 2 and usable[0].winner != usable[1].winner
    tiebreak_family = None
    outcome: confidence.TiebreakOutcome = "none"
    if len(usable) == 1:
        await run.notice("Only one of the two judge passes gave a usable verdict; it could not be cross-checked.",
                         "warning", with_verdict=True)
    elif split:
        tiebreak = await _tiebreak(run, seats, turns, context, descriptions)
        outcome = "failed" if run.spec.tiebreak_judge else "none"
        if tiebreak is not None:
            decided, tiebreak_family = tiebreak, family(run.spec.tiebreak_judge or "")
            readings.append(JudgeReading(kind="tiebreak", winner=tiebreak.winner, reasoning=tiebreak.reasoning,
                                         family=tiebreak_family))
            outcome = "sided" if tiebreak.winner in {v.winner for v in usable} else "neither"
            usable.append(tiebreak)
    rated = confidence.single_judge(len([v for v in passes if v is not None]), split, outcome)
    return settled(run, decided, rated, usable).model_copy(update={
        "split": split, "consensus": consensus, "readings": tuple(readings),
        "tiebreak_family": tiebreak_family, "judge_shares_family_with": shares,
    })


def settled(run: DebateRun, decided: Verdict, rated: confidence.Rated, verdicts: list[Verdict]) -> Verdict:
    """`decided` with its confidence, lowered by the evidence checks (the seam: `run.evidence_checks`,
    empty until citations are checked), the passes' cruxes merged, and, for No clear winner, the
    recommendation the passes support."""
    rated = confidence.with_evidence(rated, decided.winner, confidence.evidence_tally(run.evidence_checks))
    ranked = cruxes.merged(v.cruxes for v in verdicts)
    update: dict[str, object] = {"confidence": rated.level, "confidence_rule": rated.rule, "cruxes": ranked,
                                 "evidence_checks": tuple(run.evidence_checks)}
    if rated.no_clear_winner:
        update["recommendation"] = cruxes.undecided_recommendation(verdicts, ranked)
    return decided.model_copy(update=update)


def judged_seats(run: DebateRun, turns: list[Turn]) -> list[Seat]:
    """The seats with a turn among `turns`, in seating order: who a verdict is between."""
    return [s for s in run.spec.seats if any(t.seat == s.label for t in turns)]


async def _family_notice(run: DebateRun) -> tuple[str, ...]:
    """The debaters of the judge's own family, said in a notice when there are any."""
    fam = family(run.spec.judge)
    shares = tuple(s.label for s in run.spec.seats if family(s.model) == fam)
    if shares:
        who = ("debaters " if len(shares) > 1 else "debater ") + " and ".join(shares)
        await run.notice(f"The judge is of the same model family ({fam}) as {who}; a judge may favour its own "
                         "family.", with_verdict=True)
    return shares


async def _tiebreak(
    run: DebateRun, seats: list[Seat], turns: list[Turn], context: str, descriptions: dict[str, str]
) -> Verdict | None:
    """The split's one extra pass, by the third family's judge, debaters as seated; None without one."""
    model = run.spec.tiebreak_judge
    if not model:
        await run.notice("The judge's two passes disagreed and no judge of a third model family is configured: "
                         "No clear winner; both readings and the cruxes are shown.", "warning",
                         with_verdict=True)
        return None
    verdict = (await judge_pass(run, model, seats, turns, context, descriptions, "tiebreak")).verdict
    if verdict is None:
        await run.notice("The judge's two passes disagreed and the tie-break judge gave no usable answer: "
                         "No clear winner; both readings and the cruxes are shown.", "warning", with_verdict=True)
    return verdict


@dataclass(frozen=True, slots=True)
class PassResult:
    """One judge pass: its verdict (None: no usable answer) and what it cost."""

    verdict: Verdict | None
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0


async def judge_pass(run: DebateRun, model: str, order: list[Seat], turns: list[Turn], context: str,
                    descriptions: dict[str, str], kind: str) -> PassResult:
    """One judge pass (`kind`: seated, swapped, tiebreak, or a juror's), traced as a `judge {kind}` span."""
    traced = {tracing.CONVERSATION: run.debate_id, "debate.judge.pass": kind, "debate.judge.model": model}
    with tracing.span(f"judge {kind}", traced) as span:
        result = await _judged(run, model, order, turns, context, descriptions)
        tracing.note(span, {"debate.judge.usable": result.verdict is not None})
        return result


async def _judged(
    run: DebateRun, model: str, order: list[Seat], turns: list[Turn], context: str, descriptions: dict[str, str]
) -> PassResult:
    """Ask once, in the provider's structured-output mode where it has one; an answer that carries no
    winner or no recommendation is sent back once."""
    letters = "ABCD"
    to_shown = {seat.label: letters[i] for i, seat in enumerate(order)}
    to_real = {shown: real for real, shown in to_shown.items()}
    position = {seat.label: i for i, seat in enumerate(order)}
    ordered = sorted(turns, key=lambda t: (t.round, position.get(t.seat, 9)))
    labels = " or ".join(f'"{letters[i]}"' for i in range(len(order)))
    debaters = "\n".join(
        f"- Debater {to_shown[s.label]}: {s.role}" + (f" — {one_line(descriptions[s.label])}"
                                                      if s.label in descriptions else "")
        for s in order
    )
    notes = audience_block(run.interjections)
    audience = render("judge_audience", notes=notes) if notes else ""
    evidence = render("judge_evidence") if run.evidence_checks else ""  # how to weigh the marks in the transcript
    user = render("judge", topic=run.spec.topic, format=run.spec.format, extra=relabel_text(context, to_shown),
                  debaters=debaters, labels=labels,
                  transcript=render_turns(ordered, relabel=to_shown, checks=run.evidence_checks),
                  audience="\n\n".join(part for part in (evidence, relabel_text(audience, to_shown)) if part))
    system = with_quoting_rules(render("judge_system"))
    schema = verdict_schema([letters[i] for i in range(len(order))])
    continuation: tuple[Message, ...] = ()
    spent = PassResult(None)
    for attempt in range(2):
        completion = await run.aux_completion(model, system, user, max_tokens=JUDGE_MAX_TOKENS,
                                              continuation=continuation, answer_schema=schema)
        if completion is None:
            return spent
        spent = PassResult(None, spent.input_tokens + completion.input_tokens,
                           spent.output_tokens + completion.output_tokens, spent.calls + 1)
        try:
            verdict = _parse_verdict(completion.text, to_real)
        except JudgeAnswerError as exc:
            log.warning("debate %s judge pass: %s", run.debate_id, parse_error_metadata("judge", exc.code))
            if attempt == 0:
                retry = render("judge_retry", problem=str(exc), labels=labels)
                continuation = (Message(role="assistant", content=completion.text[:8000]),
                                Message(role="user", content=retry))
            continue
        return PassResult(verdict, spent.input_tokens, spent.output_tokens, spent.calls)
    return spent


def _parse_verdict(text: str, to_real: dict[str, str]) -> Verdict:
    """A verdict from any shape of answer that names a winner and a recommendation (verdict_answer.py)."""
    data = read_answer(text)
    if data is None:
        raise JudgeAnswerError("no_object", "it did not contain a JSON object naming a winner")
    letter = winner_letter(data.get("winner"), to_real)
    if letter is None:
        if _NON_ANSWER.search(str(data.get("winner", ""))):
            raise JudgeAnswerError("no_winner", '"both have merit" or a tie is not a verdict: pick one winner')
        raise JudgeAnswerError("bad_winner", f"the winner {str(data.get('winner'))[:40]!r} is not one of the debaters")
    ratings_in = data.get("ratings") if isinstance(data.get("ratings"), dict) else {}
    ratings = {k: str(ratings_in.get(k, "")).lower() for k in _RATING_KEYS}
    ratings = {k: v for k, v in ratings.items() if v in ("high", "medium", "low")}
    recommendation = one_text(data.get("recommendation"))
    if not recommendation:
        raise JudgeAnswerError("no_recommendation", "the recommendation was empty")
    evidence = text_items(data.get("evidence"))
    try:
        return Verdict(
            winner=to_real[letter],
            evidence=tuple(_unletter(item, to_real)[:EVIDENCE_CHARS] for item in evidence[:MAX_EVIDENCE]),
            reasoning=_unletter(one_text(data.get("reasoning")), to_real),
            recommendation=_unletter(recommendation, to_real),
            agreements=tuple(_unletter(s, to_real) for s in text_items(data.get("agreements"))),
            disagreements=tuple(_unletter(s, to_real) for s in text_items(data.get("disagreements"))),
            unresolved=tuple(_unletter(s, to_real) for s in text_items(data.get("unresolved"))),
            cruxes=tuple(c.model_copy(update={"disagreement": _unletter(c.disagreement, to_real),
                                              "settle": _unletter(c.settle, to_real)})
                         for c in cruxes.read_cruxes(data.get("cruxes"), text_items(data.get("disagreements")))),
            ratings=ratings,  # type: ignore[arg-type]
            scores=_scores(data.get("scores"), to_real),
            changed=_flag(data.get("changed")),
            change_note=_unletter(one_text(data.get("change_note")), to_real)[:EVIDENCE_CHARS * 2],
        )
    except ValidationError:
        raise JudgeAnswerError("invalid_fields", "some fields had the wrong type") from None


def _scores(value: object, to_real: dict[str, str]) -> tuple[StanceScore, ...]:
    scores = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and str(item.get("seat", "")).upper() in to_real:
            try:
                score = float(item.get("score") or 0)
            except (TypeError, ValueError):
                score = 0.0
            scores.append(StanceScore(seat=to_real[str(item["seat"]).upper()], stance=str(item.get("stance", "")),
                                      strongest_point=str(item.get("strongest_point", "")),
                                      fatal_weakness=str(item.get("fatal_weakness", "")),
                                      score=max(0.0, min(10.0, score))))
    return tuple(sorted(scores, key=lambda s: s.seat))


def _flag(value: object) -> bool | None:
    """A yes/no the judge may give as a JSON boolean or as words; None when it gave neither."""
    if isinstance(value, bool):
        return value
    word = str(value or "").strip().lower()
    return {"true": True, "yes": True, "false": False, "no": False}.get(word)


def _unletter(text: str, to_real: dict[str, str]) -> str:
    """Map 'Debater B' in a swapped pass back to the real seat label."""
    return relabel_text(text, to_real)
