"""The verdict: a fresh-context judge asked twice, the debaters' order swapped, the passes compared.

Both passes run concurrently. Each sees anonymous letters assigned in presentation order, so a
judge that favours whoever comes first shows up as a split verdict instead of a hidden bias.
"""

from __future__ import annotations

import logging
import re

from pydantic import ValidationError

from orchestrator.debate.formats.base import relabel_text, render_turns
from orchestrator.debate.jsonparse import JSONExtractError, extract_json_object, parse_error_metadata
from orchestrator.debate.run import DebateRun
from orchestrator.models import Seat, StanceScore, Turn, Verdict
from orchestrator.prompts import render
from orchestrator.providers.base import Message

log = logging.getLogger(__name__)

JUDGE_MAX_TOKENS = 3000
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
    """Two concurrent passes in opposite orders; None when neither produced a usable verdict."""
    seats = [s for s in run.spec.seats if any(t.seat == s.label for t in turns)]
    if not seats:
        return None
    orders = [seats, list(reversed(seats))]
    passes = await run.steps.gather(*(_one_pass(run, order, turns, context, descriptions or {}) for order in orders))
    usable = [v for v in passes if v is not None]
    if not usable:
        return None
    first = usable[0]
    split = len(usable) == 2 and usable[0].winner != usable[1].winner
    reasoning = first.reasoning
    if split:
        reasoning += (
            f"\n\nSplit verdict: with the debaters presented in the opposite order, the judge preferred "
            f"{usable[1].winner}: {usable[1].reasoning[:600]}"
        )
    elif len(usable) == 1:
        await run.notice("Only one of the two judge passes gave a usable verdict; it could not be cross-checked.",
                         "warning")
    return first.model_copy(update={"split": split, "reasoning": reasoning, "consensus": consensus})


async def _one_pass(
    run: DebateRun, order: list[Seat], turns: list[Turn], context: str, descriptions: dict[str, str]
) -> Verdict | None:
    letters = "ABCD"
    to_shown = {seat.label: letters[i] for i, seat in enumerate(order)}
    to_real = {shown: real for real, shown in to_shown.items()}
    position = {seat.label: i for i, seat in enumerate(order)}
    ordered = sorted(turns, key=lambda t: (t.round, position.get(t.seat, 9)))
    labels = " or ".join(f'"{letters[i]}"' for i in range(len(order)))
    debaters = "\n".join(
        f"- Debater {to_shown[s.label]}: {s.role}" + (f" — {descriptions[s.label]}" if s.label in descriptions else "")
        for s in order
    )
    user = render("judge", topic=run.spec.topic, format=run.spec.format, extra=context, debaters=debaters,
                  transcript=render_turns(ordered, relabel=to_shown), labels=labels)
    system = render("judge_system")
    continuation: tuple[Message, ...] = ()
    for attempt in range(2):
        text = await run.aux(run.spec.judge, system, user, max_tokens=JUDGE_MAX_TOKENS, continuation=continuation)
        if text is None:
            return None
        try:
            return _parse_verdict(text, to_real)
        except JudgeAnswerError as exc:
            log.warning("debate %s judge pass: %s", run.debate_id, parse_error_metadata("judge", exc.code))
            if attempt == 0:
                retry = render("judge_retry", problem=str(exc), labels=labels)
                continuation = (Message(role="assistant", content=text[:8000]), Message(role="user", content=retry))
    return None


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    out = []
    for item in value:
        if isinstance(item, dict):
            out.append(" — ".join(str(v) for v in item.values() if v))
        elif item:
            out.append(str(item))
    return tuple(out)


def _parse_verdict(text: str, to_real: dict[str, str]) -> Verdict:
    try:
        data = extract_json_object(text)
    except JSONExtractError as exc:
        raise JudgeAnswerError(exc.code, "it did not contain a JSON object") from None
    winner = str(data.get("winner", "")).strip().strip('"').upper().removeprefix("DEBATER ").strip()
    if winner not in to_real:
        if _NON_ANSWER.search(str(data.get("winner", ""))):
            raise JudgeAnswerError("no_winner", '"both have merit" or a tie is not a verdict: pick one winner')
        raise JudgeAnswerError("bad_winner", f"the winner {str(data.get('winner'))[:40]!r} is not one of the debaters")
    ratings_in = data.get("ratings") if isinstance(data.get("ratings"), dict) else {}
    ratings = {k: str(ratings_in.get(k, "")).lower() for k in _RATING_KEYS}
    ratings = {k: v for k, v in ratings.items() if v in ("high", "medium", "low")}
    scores = []
    for item in data.get("scores") or []:
        if isinstance(item, dict) and str(item.get("seat", "")).upper() in to_real:
            try:
                score = float(item.get("score") or 0)
            except (TypeError, ValueError):
                score = 0.0
            scores.append(StanceScore(seat=to_real[str(item["seat"]).upper()], stance=str(item.get("stance", "")),
                                      strongest_point=str(item.get("strongest_point", "")),
                                      fatal_weakness=str(item.get("fatal_weakness", "")),
                                      score=max(0.0, min(10.0, score))))
    recommendation = str(data.get("recommendation") or "").strip()
    if not recommendation:
        raise JudgeAnswerError("no_recommendation", "the recommendation was empty")
    try:
        return Verdict(
            winner=to_real[winner],
            reasoning=_unletter(str(data.get("reasoning") or ""), to_real),
            recommendation=_unletter(recommendation, to_real),
            agreements=tuple(_unletter(s, to_real) for s in _strings(data.get("agreements"))),
            disagreements=tuple(_unletter(s, to_real) for s in _strings(data.get("disagreements"))),
            unresolved=tuple(_unletter(s, to_real) for s in _strings(data.get("unresolved"))),
            ratings=ratings,  # type: ignore[arg-type]
            scores=tuple(sorted(scores, key=lambda s: s.seat)),
        )
    except ValidationError:
        raise JudgeAnswerError("invalid_fields", "some fields had the wrong type") from None


def _unletter(text: str, to_real: dict[str, str]) -> str:
    """Map 'Debater B' in a swapped pass back to the real seat label."""
    return relabel_text(text, to_real)
