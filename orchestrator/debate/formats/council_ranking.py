"""council, stage 2: each member's anonymous ballot over the others' answers, and the aggregate.

A ranker sees the other members' answers under letters of its own (`ballot`): shuffled per ranker and
round from a seed (the debate, the round, the ranker), so a resumed durable run draws the same letters
and no two rankers see the same member under the same letter by design. Its own answer is never on its
ballot, and model names are taken out of the answers it reads (`unnamed`).

A ranking is read from JSON (`{"ranking": [{"answer": "B", "reason": "…"}, …]}`, a ```json block or the
outermost braces), or from a numbered list ("1. Answer B — …"); letters not on the ballot and repeats
are ignored. The aggregate is a Borda count: of k answers on a ballot the first gets k points, the last
1, one left unranked 0. Ties go to the lower average place, then to seating order (A before B).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from orchestrator.debate.jsonparse import JSONExtractError, extract_json_object
from orchestrator.models import Turn

LETTERS = "ABCDE"
REASON_CHARS = 600
_ANSWER_REF = re.compile(r"\b(Answer|Response) ([A-E])\b")
_NUMBERED = re.compile(r"^\s*(?:#+\s*)?\d+\s*[.)]\s*\**\s*(?:Answer|Response)?\s*([A-E])\b\**\s*[:—–-]*\s*(.*)$",
                       re.MULTILINE)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Placing(Frozen):
    member: str  # seat label
    reason: str = ""


class Ranking(Frozen):
    """One ranker's order of the others' answers, by their real seat labels (best first)."""

    ranker: str
    order: tuple[Placing, ...]


class Standing(Frozen):
    member: str
    points: int
    average_place: float | None  # None: nobody placed it
    first_places: int = 0


class RankingError(ValueError):
    def __init__(self, code: str, problem: str) -> None:
        super().__init__(problem)
        self.code = code


def ballot(debate_id: str, round_no: int, ranker: str, others: Sequence[str]) -> dict[str, str]:
    """Letter → seat label, for `ranker`'s ballot in `round_no`: `others` shuffled by a fixed seed."""
    shuffled = list(others)
    random.Random(f"{debate_id}:{round_no}:{ranker}").shuffle(shuffled)
    return {LETTERS[i]: label for i, label in enumerate(shuffled)}


def unnamed(text: str, models: Sequence[str]) -> str:
    """`text` with every seated model's name (`provider:model` and the bare model) taken out."""
    for model in sorted(set(models), key=len, reverse=True):
        for name in (model, model.split(":", 1)[-1]):
            if len(name) >= 3:
                text = re.sub(re.escape(name), "[a model]", text, flags=re.IGNORECASE)
    return text


def _letter(value: object) -> str:
    text = str(value or "").strip().strip("*").strip()
    match = re.fullmatch(r"(?:Answer|Response)?\s*([A-Ea-e])\.?", text)
    return match.group(1).upper() if match else ""


def _items(data: dict) -> list[tuple[str, str]]:
    raw = next((data[k] for k in ("ranking", "rankings", "order", "ranked") if k in data), None)
    if not isinstance(raw, list):
        raise RankingError("missing_ranking", 'the key "ranking" with a list of answers was missing')
    items: list[tuple[str, str]] = []
    for item in raw:
        if isinstance(item, dict):
            letter = _letter(next((item[k] for k in ("answer", "letter", "id", "label") if k in item), ""))
            reason = next((item[k] for k in ("reason", "reasons", "why", "rationale") if k in item), "")
            items.append((letter, " ".join(reason) if isinstance(reason, list) else str(reason)))
        else:
            items.append((_letter(item), ""))
    return items


def parse_ranking(text: str, letters: dict[str, str], ranker: str) -> Ranking:
    """`text` read as a ranking of the ballot `letters`; RankingError when it names none of them."""
    try:
        items = _items(extract_json_object(text))
    except JSONExtractError:
        items = [(m.group(1), m.group(2)) for m in _NUMBERED.finditer(text)]
        if not items:
            raise RankingError("no_ranking", "it held no JSON object and no numbered list of answers") from None
    seen: list[Placing] = []
    for letter, reason in items:
        member = letters.get(letter)
        if member and member not in {p.member for p in seen}:
            seen.append(Placing(member=member, reason=relabel(reason.strip(), letters)[:REASON_CHARS]))
    if not seen:
        raise RankingError("no_known_answer", f"it ranked none of the answers {', '.join(letters)}")
    return Ranking(ranker=ranker, order=tuple(seen))


def relabel(text: str, letters: dict[str, str]) -> str:
    """'Answer X' as the ranker wrote it, renamed 'Member <seat>' for everyone else to read."""
    return _ANSWER_REF.sub(lambda m: f"Member {letters[m.group(2)]}" if m.group(2) in letters else m.group(0),
                           text)


def aggregate(rankings: Sequence[Ranking], members: Sequence[str]) -> list[Standing]:
    """Every member's Borda points and average place, best first (ties: average place, then seating order)."""
    points = dict.fromkeys(members, 0)
    places: dict[str, list[int]] = {m: [] for m in members}
    firsts = dict.fromkeys(members, 0)
    for ranking in rankings:
        size = len([m for m in members if m != ranking.ranker])
        for place, placing in enumerate(ranking.order, start=1):
            if placing.member in points:
                points[placing.member] += size - place + 1
                places[placing.member].append(place)
                firsts[placing.member] += place == 1
    standings = [Standing(member=m, points=points[m], first_places=firsts[m],
                          average_place=round(sum(places[m]) / len(places[m]), 2) if places[m] else None)
                 for m in members]
    order = {m: i for i, m in enumerate(members)}
    return sorted(standings, key=lambda s: (-s.points, s.average_place or 99.0, order[s.member]))


def render_ranking(ranking: Ranking) -> str:
    """A ranking turn's text, as the thread and the log show it."""
    return "\n".join(f"{i}. Member {p.member}" + (f" — {p.reason}" if p.reason else "")
                     for i, p in enumerate(ranking.order, start=1))


def ranking_from_turn(turn: Turn) -> Ranking | None:
    """A logged ranking turn read back (a continuation's history): its order, by seat label."""
    order = [Placing(member=m.group(1), reason=m.group(2).strip())
             for m in re.finditer(r"^\d+\. Member ([A-E])(?: — (.*))?$", turn.text, re.MULTILINE)]
    return Ranking(ranker=turn.seat, order=tuple(order)) if order else None


def render_table(standings: Sequence[Standing], rankings: Sequence[Ranking]) -> str:
    """The aggregate ranking as a small fixed-width table, then each ranker's order."""
    rows = [f"{'#':>2}  {'member':<6}  {'points':>6}  {'avg place':>9}  {'1st':>3}"]
    for i, s in enumerate(standings, start=1):
        average = f"{s.average_place:.1f}" if s.average_place is not None else "—"
        rows.append(f"{i:>2}  {s.member:<6}  {s.points:>6}  {average:>9}  {s.first_places:>3}")
    return "\n".join(["```", *rows, "```", *orders(rankings)])


def orders(rankings: Sequence[Ranking]) -> list[str]:
    """Each ranker's order, one line each ("A ranks: B › C")."""
    return [f"{r.ranker} ranks: " + " › ".join(p.member for p in r.order) for r in rankings]
