"""challenge: a proposer states a position, a challenger attacks it, for 1–5 rounds.

Rounds 1–2 carry the full prior text. From round 3 the rounds before the previous one are folded into
a running summary made by the judge model, so the prompt stays bounded while concessions survive. A
debater whose model has a small known context (a local model's slot) gets the summary one round earlier
when the previous round's text would not leave room for the rest of its prompt and its answer.
"""

from __future__ import annotations

from orchestrator.debate.formats.base import FormatResult, render_turns
from orchestrator.debate.quoting import quote_block, quote_turn, with_quoting_rules
from orchestrator.debate.run import DebateRun
from orchestrator.models import Seat, Turn, Verdict
from orchestrator.prompts import render
from orchestrator.providers import budget, context_window

SUMMARY_MAX_TOKENS = 1100
PROMPT_TOKENS = 1000  # a turn's prompt beside its history: rules, topic, the quoted latest turn
HISTORY_CHARS_PER_TOKEN = 3  # a conservative count: English runs about four characters a token


class ChallengeFormat:
    name = "challenge"

    async def run(self, run: DebateRun) -> FormatResult:
        proposer, challenger = run.spec.seats[0], run.spec.seats[1]
        total = run.spec.rounds
        self.summary: str | None = None
        self.summarized_through = 0
        completed = 0
        for round_no in range(1, total + 1):
            title = "Opening and challenge" if round_no == 1 else "Defense and follow-up"
            await run.round_started(round_no, total, title)
            await self._fold_old_rounds(run, round_no)
            defense = await run.turn(proposer, round_no, "opening" if round_no == 1 else "defense",
                                     _system(proposer), self._proposer_prompt(run, round_no))
            if defense.status == "failed":
                if round_no == 1:
                    return FormatResult(0, abort=f"The proposer ({proposer.model}) failed in round 1: {defense.error}")
                await _incomplete(run, round_no, "proposer", defense)
                break
            attack = await run.turn(challenger, round_no, "challenge" if round_no == 1 else "follow-up",
                                    _system(challenger), self._challenger_prompt(run, round_no, defense))
            if attack.status == "failed":
                if round_no == 1:
                    await run.notice(
                        f"The challenger ({challenger.model}) failed in round 1: {attack.error}. "
                        "The proposer's position is shown uncontested: it was never tested by debate.",
                        "warning",
                    )
                    return FormatResult(1, verdict=_uncontested(proposer, defense))
                await _incomplete(run, round_no, "challenger", attack)
                break
            completed = round_no
            await run.round_completed(round_no, total)
            if run.stopped_early:
                break
        return FormatResult(completed)

    def _history(self, run: DebateRun, before_round: int, exclude: Turn | None = None) -> str:
        turns = [t for t in run.transcript if t.round < before_round and t is not exclude]
        recent = [t for t in turns if t.round > self.summarized_through]
        if self.summary is None:
            return render("history_full", transcript=render_turns(turns)) if turns else ""
        return render("history_summarized", summary=self._quoted_summary(), transcript=render_turns(recent) or "(none)")

    def _quoted_summary(self) -> str:
        through = self.summarized_through
        return quote_block("summary", self.summary or "", rounds="1" if through == 1 else f"1–{through}")

    def _proposer_prompt(self, run: DebateRun, round_no: int) -> str:
        if round_no == 1:
            return render("challenge_opening", topic=run.spec.topic)
        latest = _last(run, role="challenger")
        return render("challenge_defense", topic=run.spec.topic, round=round_no, rounds=run.spec.rounds,
                      history=self._history(run, round_no, exclude=latest),
                      challenge=quote_turn(latest) if latest else "")

    def _challenger_prompt(self, run: DebateRun, round_no: int, defense: Turn) -> str:
        if round_no == 1:
            return render("challenge_challenge", topic=run.spec.topic, opening=quote_turn(defense))
        return render("challenge_followup", topic=run.spec.topic, round=round_no, rounds=run.spec.rounds,
                      history=self._history(run, round_no), defense=quote_turn(defense))

    def _fold_through(self, run: DebateRun, round_no: int) -> int:
        """The last round to fold before round `round_no`: N-2, or N-1 when the unfolded rounds would not
        fit the smallest known context of the debaters beside the rest of the prompt and the answer."""
        windows = [w for seat in run.spec.seats[:2] if (w := context_window(seat.model, run.settings))]
        if round_no < 2 or not windows:
            return round_no - 2
        answer = max(budget(seat.model.partition(":")[0], run.spec.effort) for seat in run.spec.seats[:2])
        room = (min(windows) - PROMPT_TOKENS - answer) * HISTORY_CHARS_PER_TOKEN
        pending = [t for t in run.transcript if self.summarized_through < t.round < round_no]
        return round_no - 1 if len(render_turns(pending)) > room else round_no - 2

    async def _fold_old_rounds(self, run: DebateRun, round_no: int) -> None:
        """Before round N ≥ 3, fold rounds up to N-2 into the running summary (one call per round); up to
        N-1 from round 2 on for a small context (`_fold_through`)."""
        while self.summarized_through < self._fold_through(run, round_no):
            target = self.summarized_through + 1
            turns = [t for t in run.transcript if t.round == target]
            previous = f"Summary of the rounds before round {target}:\n{self._quoted_summary()}" if self.summary else ""
            text = await run.aux(
                run.spec.judge,
                with_quoting_rules(render("round_summary_system")),
                render("round_summary", topic=run.spec.topic, previous_summary=previous,
                       transcript=render_turns(turns)),
                max_tokens=SUMMARY_MAX_TOKENS, purpose="summary",
            )
            if not text:
                await run.notice("A round summary could not be made; later rounds carry the full transcript.")
                self.summary = None
                self.summarized_through = 0
                return
            self.summary = text.strip()
            self.summarized_through = target


def _system(seat: Seat) -> str:
    return with_quoting_rules(render("debater_rules", label=seat.label, role=seat.role))


def _last(run: DebateRun, *, role: str) -> Turn | None:
    return next((t for t in reversed(run.transcript) if t.role == role), None)


async def _incomplete(run: DebateRun, round_no: int, who: str, turn: Turn) -> None:
    covered = f"rounds 1–{round_no - 1}" if round_no > 2 else "round 1"
    await run.notice(
        f"Round {round_no} is incomplete: the {who} failed ({turn.error}). The verdict covers {covered}.",
        "warning",
    )


def _uncontested(proposer: Seat, opening: Turn) -> Verdict:
    paragraphs = [p.strip() for p in opening.text.strip().split("\n") if p.strip()]
    closing = paragraphs[-1] if paragraphs else opening.text.strip()
    return Verdict(
        winner=proposer.label,
        reasoning="The challenger failed in round 1, so the proposer's case was never challenged. "
        "It stands uncontested, which is not the same as proven.",
        recommendation=f"Uncontested position (verify before acting): {closing[:600]}",
        ratings={"genuine_disagreement": "low", "evidence_quality": "low", "challenge_depth": "low"},
        unresolved=("Every claim in the opening is untested: the challenger never answered.",),
    )
