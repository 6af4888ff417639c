"""A jury: two to five judges (`spec.judges`), each asked about the anonymous transcript on its own, all at once, the
verdict the majority's.

By default each juror judges twice with the debaters' order swapped, so a position bias costs its vote instead of
deciding the verdict; confidence comes from how far the jurors agree (confidence.py). Nothing here reads the clock or
draws a random number: a resumed run replays to the same verdict.
"""

from __future__ import annotations

from typing import Literal

from orchestrator.debate import confidence
from orchestrator.debate.judge import PassResult, judge_pass, judged_seats, settled
from orchestrator.debate.run import DebateRun
from orchestrator.models import JurorVote, Seat, Turn, Verdict
from orchestrator.providers import family
from orchestrator.providers.pricing import estimate_cost

JuryOrder = Literal["swapped", "alternating"]
# "swapped": each juror twice, the debaters' order swapped; a juror whose passes disagree is undecided and casts
# no vote. "alternating": each juror once, the order alternating across the panel (half the calls).
JURY_ORDER: JuryOrder = "swapped"


def _plan(panel: tuple[str, ...], seats: list[Seat], order: JuryOrder) -> list[tuple[int, str, list[Seat]]]:
    """(juror index, pass kind, debaters in the order shown) for every pass the jury makes."""
    swapped = list(reversed(seats))
    if order == "alternating":
        return [(i, "seated" if i % 2 == 0 else "swapped", seats if i % 2 == 0 else swapped)
                for i in range(len(panel))]
    return [(i, kind, shown) for i in range(len(panel)) for kind, shown in (("seated", seats), ("swapped", swapped))]


async def jury(
    run: DebateRun,
    turns: list[Turn],
    *,
    context: str = "",
    consensus: str | None = None,
    descriptions: dict[str, str] | None = None,
    order: JuryOrder | None = None,
) -> Verdict | None:
    """Every juror's passes concurrently, then the majority; None when no juror gave a usable answer.
    `order`: how each juror sees the debaters (None: JURY_ORDER, read when called).

    Every juror gets a single judge's prompt, with no model or family named to anyone. The verdict carries
    each juror's vote, reasoning, tokens and cost (`JurorVote`); its body is the first winning juror's (with no
    winner: the first answer's), its cruxes every juror's merged. A juror that fails is dropped, with a notice."""
    seats = judged_seats(run, turns)
    if not seats:
        return None
    panel = run.spec.judges
    plan = _plan(panel, seats, order or JURY_ORDER)
    _load_clients(run, panel)
    results = await run.steps.gather(*(
        judge_pass(run, panel[i], shown, turns, context, descriptions or {}, f"juror {i + 1} {kind}")
        for i, kind, shown in plan))
    by_juror: dict[int, list[PassResult]] = {i: [] for i in range(len(panel))}
    for (i, _kind, _shown), result in zip(plan, results, strict=True):
        by_juror[i].append(result)
    debating = {family(s.model) for s in seats}
    jurors = [_vote(i + 1, panel[i], by_juror[i], family(panel[i]) in debating) for i in range(len(panel))]
    await _say_who_sat(run, jurors)
    votes = [j for j in jurors if j.status == "voted"]
    undecided = sum(1 for j in jurors if j.status == "undecided")
    rated, winner = confidence.jury([j.winner for j in votes], undecided)
    answered = [p.verdict for j in jurors for p in by_juror[j.seat - 1] if p.verdict is not None]
    if not answered:
        return None
    body = [p.verdict for j in votes if j.winner == winner for p in by_juror[j.seat - 1] if p.verdict is not None]
    decided = (body or answered)[0]
    return settled(run, decided, rated, answered).model_copy(update={
        "winner": winner or decided.winner, "split": any(j.winner != winner for j in votes),
        "consensus": consensus, "readings": (), "tiebreak_family": None, "judge_shares_family_with": (),
        "jury": tuple(jurors), "jury_tie": winner is None and len(votes) > 1,
    })


def _load_clients(run: DebateRun, panel: tuple[str, ...]) -> None:
    """Make each juror's client (importing its SDK) before any call is in flight: importing the
    anthropic SDK while an openai request is streaming stalls that request until it times out."""
    for model in panel:
        try:
            run.registry.resolve(model)
        except (KeyError, ValueError):
            continue  # the juror's call reports it, and the juror is counted as failed


def _vote(seat: int, model: str, passes: list[PassResult], same_family: bool) -> JurorVote:
    usable = [p.verdict for p in passes if p.verdict is not None]
    winners = tuple(v.winner for v in usable)
    status = "failed" if not usable else ("voted" if len(set(winners)) == 1 else "undecided")
    tokens_in, tokens_out = sum(p.input_tokens for p in passes), sum(p.output_tokens for p in passes)
    return JurorVote(
        seat=seat, model=model, family=family(model), status=status,  # type: ignore[arg-type]
        winner=winners[0] if status == "voted" else None, reasoning=usable[0].reasoning if usable else "",
        passes=winners, same_family=same_family, input_tokens=tokens_in, output_tokens=tokens_out,
        cost_usd=estimate_cost(model, tokens_in, tokens_out), calls=sum(p.calls for p in passes))


async def _say_who_sat(run: DebateRun, jurors: list[JurorVote]) -> None:
    """Notices for the thread: a juror of a debater's family, a juror that gave no usable answer."""
    for juror in jurors:
        if juror.same_family:
            await run.notice(f"{juror.name} is of a debater's model family ({juror.family}), seated because no "
                             "judge of another family was available; a judge may favour its own family.",
                             with_verdict=True)
    failed = [j for j in jurors if j.status == "failed"]
    if failed:
        names = " and ".join(j.name for j in failed)
        left = len(jurors) - len(failed)
        await run.notice(f"{names} gave no usable answer, so a {left}-judge jury decided." if left else
                         "No juror gave a usable answer.", "warning", with_verdict=True)
