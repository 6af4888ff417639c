"""stances: the topic split into 2–4 mutually exclusive stances, one anonymous debater per stance.

Round plan (from the seed; `spec.rounds` is not used here): one call to the judge model splits the topic into
stances, as JSON (with no two meaningful stances the debate is not run and the user is told to ask a question
instead); then openings in parallel and up to 2 rebuttal rounds in parallel, each debater seeing its own previous
turn and the others' under their letters, stopping early once every debater reports `no_new_points` in a round.

Debaters are known only by their letters: no model or vendor name is ever put in a prompt. Each turn is a JSON
envelope (stance, arguments, rebuttals, no_new_points), run on a silent copy of the run (no streaming) and shown
rendered as markdown, never raw. An unreadable reply is asked for once more with a JSON-only reminder, else logged as
an empty turn with a warning (only `PARSE_ERROR:…` metadata in the log). A round in which nobody gave a readable turn
is retried once and never counts as convergence.
"""

from __future__ import annotations

import logging

from orchestrator.debate.formats.base import FormatResult, combine_attempts
from orchestrator.debate.formats.stance_envelope import (
    Envelope,
    EnvelopeError,
    EnvelopeTurn,
    Split,
    converged,
    not_debatable_message,
    parse_envelope,
    parse_split,
    render_envelope,
    split_schema,
)
from orchestrator.debate.jsonparse import parse_error_metadata
from orchestrator.debate.quoting import one_line, quote_turn, with_quoting_rules
from orchestrator.debate.run import DebateRun
from orchestrator.events import EventBus, TurnCompleted, TurnFailed, TurnStarted
from orchestrator.models import Seat, Turn
from orchestrator.prompts import render
from orchestrator.providers.base import Message

log = logging.getLogger(__name__)

REBUTTAL_ROUNDS = 2
TOTAL_ROUNDS = 1 + REBUTTAL_ROUNDS
SPLIT_MAX_TOKENS = 800


class StancesFormat:
    name = "stances"

    async def run(self, run: DebateRun) -> FormatResult:
        split = await _split(run)
        if isinstance(split, str):
            return FormatResult(0, abort=split)
        seats, stances = await _assign(run, split.stances)
        self.stance_of = dict(zip((s.label for s in seats), stances, strict=True))
        self.envelopes: dict[str, list[Envelope]] = {s.label: [] for s in seats}
        self.latest: dict[str, Turn] = {}
        self.silent = DebateRun(
            spec=run.spec,
            settings=run.settings,
            registry=run.registry,
            bus=EventBus(),
            stats=run.stats,
            warnings=run.warnings,
            redact=run.redact,
            steps=run.steps,
            interjections=run.interjections,
        )  # same counters, checkpoints and audience notes, no events: the raw JSON never reaches users
        completed = await self._rounds(run, seats)
        return FormatResult(
            completed,
            judge_context=render("stances_judge_context"),
            descriptions=self.stance_of,
            rounds_planned=TOTAL_ROUNDS,
        )

    async def _rounds(self, run: DebateRun, seats: list[Seat]) -> int:
        active = list(seats)
        completed = 0
        for round_no in range(1, TOTAL_ROUNDS + 1):
            title = "Openings" if round_no == 1 else f"Rebuttals {round_no - 1} of {REBUTTAL_ROUNDS}"
            await run.round_started(round_no, TOTAL_ROUNDS, title)
            results = await self._play_round(run, active, round_no)
            for failed in (r for r in results if r.turn.status == "failed"):
                await run.notice(
                    f"Debater {failed.seat.label} ({failed.seat.model}) failed in round {round_no}: "
                    f"{failed.turn.error}. It leaves the debate.",
                    "warning",
                )
            active = [r.seat for r in results if r.turn.status != "failed"]
            if not any(r.readable for r in results):
                if round_no > 1:
                    await run.notice(
                        f"Round {round_no} produced no readable turn, even when run again: the debate stops and "
                        f"the verdict covers rounds 1–{round_no - 1}.",
                        "warning",
                    )
                break
            completed = round_no
            await run.round_completed(round_no, TOTAL_ROUNDS)
            if run.stopped_early:
                break
            if len(active) < 2:
                if active and round_no < TOTAL_ROUNDS:
                    await run.notice(
                        f"Only Debater {active[0].label} is left: its stance stands uncontested from here.", "warning"
                    )
                break
            if round_no > 1 and converged(results):
                await run.notice(f"Every debater reports no new points: the debate ends after round {round_no}.")
                break
        return completed

    async def _play_round(self, run: DebateRun, active: list[Seat], round_no: int) -> list[EnvelopeTurn]:
        """All active debaters at once; a round with no readable turn (but some unreadable) runs once more."""
        results = await self._gather(run, active, round_no)
        if not any(r.readable for r in results) and any(r.turn.status == "empty" for r in results):
            await run.notice(
                f"No debater gave a readable answer in round {round_no}: running the round once more.", "warning"
            )
            failed = [r for r in results if r.turn.status == "failed"]
            again = [r.seat for r in results if r not in failed]
            results = failed + await self._gather(run, again, round_no, take=1)
        return results

    async def _gather(self, run: DebateRun, seats: list[Seat], round_no: int, take: int = 0) -> list[EnvelopeTurn]:
        """`take` 1: the round played again; its turns are new turns to readers (their keys say so)."""
        prompts = [self._prompt(run, seat, seats, round_no) for seat in seats]
        return list(
            await run.steps.gather(
                *(self._envelope_turn(run, seat, round_no, prompt, take)
                  for seat, prompt in zip(seats, prompts, strict=True))
            )
        )

    def _prompt(self, run: DebateRun, seat: Seat, active: list[Seat], round_no: int) -> str:
        stances = "\n".join(f"- Debater {label}: {one_line(stance)}" for label, stance in self.stance_of.items())
        if round_no == 1:
            return render("stances_opening", topic=run.spec.topic, stances=stances, rounds=TOTAL_ROUNDS)
        own = self.latest.get(seat.label)
        others = [
            quote_turn(self.latest[s.label]) if s.label in self.latest else f"Debater {s.label}:\n(no readable turn)"
            for s in active
            if s.label != seat.label
        ]
        return render(
            "stances_rebuttal",
            topic=run.spec.topic,
            stances=stances,
            round=round_no,
            rounds=TOTAL_ROUNDS,
            own=quote_turn(own) if own else "(none of your earlier answers could be read)",
            others="\n\n".join(others) or "(none)",
        )

    def _system(self, seat: Seat) -> str:
        return with_quoting_rules(render("stances_system", label=seat.label, count=len(self.stance_of),
                                         stance=one_line(self.stance_of[seat.label])))

    async def _envelope_turn(self, run: DebateRun, seat: Seat, round_no: int, user: str, take: int = 0
                             ) -> EnvelopeTurn:
        """One debater's turn: call, parse, one JSON-only retry, then a rendered, an empty or a failed turn."""
        kind = "opening" if round_no == 1 else "rebuttal"
        await run.emit(
            TurnStarted(
                debate_id=run.debate_id, round=round_no, seat=seat.label, role=seat.role, kind=kind, model=seat.model,
                take=take,
            )
        )
        system = self._system(seat)
        attempts = [await self.silent.turn(seat, round_no, kind, system, user, record=False)]
        envelope: Envelope | None = None
        for attempt in range(2):
            last = attempts[-1]
            if last.status == "failed":
                turn = combine_attempts(attempts, status="failed", error=last.error)
                await run.emit(TurnFailed(debate_id=run.debate_id, turn=turn, take=take))
                return EnvelopeTurn(seat, turn, None)
            try:
                envelope = parse_envelope(last.text)
                break
            except EnvelopeError as exc:
                log.warning("debate %s: %s", run.debate_id, parse_error_metadata("stances_envelope", exc.code))
                if attempt == 0:
                    await run.notice(
                        f"Debater {seat.label}'s round {round_no} answer was not in the required "
                        "JSON format; asking once more."
                    )
                    reminder = render("stances_json_reminder", problem=exc.problem)
                    attempts.append(
                        await self.silent.turn(seat, round_no, kind, system, f"{user}\n\n{reminder}", record=False)
                    )
        if envelope is None:
            turn = combine_attempts(attempts, status="empty", error="no readable JSON answer, even after a reminder")
            await run.emit(TurnCompleted(debate_id=run.debate_id, turn=turn, take=take))
            await run.notice(
                f"Debater {seat.label}'s round {round_no} turn is recorded empty: its answer was not "
                "in the required JSON format, even after a reminder.",
                "warning",
            )
            return EnvelopeTurn(seat, turn, None)
        turn = combine_attempts(attempts, text=render_envelope(envelope))
        turn = (await run.emit(TurnCompleted(debate_id=run.debate_id, turn=turn, take=take))).turn
        run.transcript.append(turn)
        await run.check_evidence(turn)
        self.latest[seat.label] = turn
        self.envelopes[seat.label].append(envelope)
        return EnvelopeTurn(seat, turn, envelope)


async def _split(run: DebateRun) -> Split | str:
    """The stances, or the message to abort with."""
    system, user = render("stances_split_system"), render("stances_split", topic=run.spec.topic)
    continuation: tuple[Message, ...] = ()
    for attempt in range(2):
        answer = await run.aux_completion(run.spec.judge, system, user, max_tokens=SPLIT_MAX_TOKENS,
                                          continuation=continuation, answer_schema=split_schema(), purpose="split")
        text = answer.text if answer is not None else None
        if text is None:
            return "Debate failed: the topic could not be split into stances (the call to the judge model failed)."
        try:
            split = parse_split(text)
        except EnvelopeError as exc:
            log.warning("debate %s: %s", run.debate_id, parse_error_metadata("stances_split", exc.code))
            if attempt == 0:
                retry = render("stances_split_retry", problem=exc.problem)
                continuation = (Message(role="assistant", content=text[:8000]), Message(role="user", content=retry))
            continue
        return split if split.debatable else not_debatable_message(split.reason)
    return (
        "Debate failed: the topic could not be split into stances (the judge model's answer was unreadable "
        "twice). Try again, or rephrase the topic as a choice between positions."
    )


async def _assign(run: DebateRun, stances: tuple[str, ...]) -> tuple[list[Seat], list[str]]:
    """One stance per debater, in seating order; a mismatch uses the smaller number and says so."""
    seats = list(run.spec.seats)
    count = min(len(stances), len(seats))
    if len(stances) < len(seats):
        out = ", ".join(s.label for s in seats[count:])
        await run.notice(
            f"The topic splits into {len(stances)} stances for {len(seats)} debaters: "
            f"{count} debate, and {out} sit(s) this one out."
        )
    elif len(stances) > len(seats):
        dropped = "; ".join(stances[count:])
        await run.notice(
            f"The topic splits into {len(stances)} stances but only {len(seats)} debaters are seated: "
            f"the first {count} are debated, and these are not: {dropped}"
        )
    seats, chosen = seats[:count], list(stances[:count])
    listing = "\n".join(f"- Debater {s.label}: {stance}" for s, stance in zip(seats, chosen, strict=True))
    await run.notice(f"Stances:\n{listing}")
    return seats, chosen
