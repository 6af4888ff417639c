"""The data that crosses every boundary: what a debate is asked to be, and what it became."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from orchestrator.brief.models import Brief
from orchestrator.safety import scrub_user_text

Format = Literal["challenge", "consensus", "stances", "council"]
Effort = Literal["low", "medium", "high", "max"]
Role = Literal["proposer", "challenger", "debater", "judge"]
TurnStatus = Literal["ok", "failed", "empty"]
DebateStatus = Literal["pending", "running", "completed", "failed", "cancelled"]
Rating = Literal["high", "medium", "low"]
Confidence = Literal["high", "medium", "low", "none"]  # none: "No clear winner"
CheckStatus = Literal["verified", "not_found", "unreachable", "not_checked"]
PassKind = Literal["seated", "swapped", "tiebreak"]

# The limits every surface checks, through bots/commands.py; the models below enforce them again.
FORMATS: tuple[str, ...] = ("challenge", "consensus", "stances", "council")
EFFORTS: tuple[str, ...] = ("low", "medium", "high", "max")  # in order: each spends more than the one before
MAX_TOPIC_CHARS = 4000
MIN_ROUNDS = 1
MAX_ROUNDS = 5
MIN_DEBATERS = 2
MAX_DEBATERS = 4
MAX_COUNCIL = 5  # members of a council (--format council); every other format seats at most MAX_DEBATERS
MIN_JUDGES = 2  # a jury (`--judges`): fewer is one judge, more costs without steadying the verdict
MAX_JUDGES = 5
MAX_INTERJECTIONS_PER_ROUND = 3  # audience notes one round's prompts take; more wait for the next round
MAX_INTERJECTION_CHARS = 500
MAX_MODEL_CHARS = 200  # a `provider:model` string (the longest real names are under 100; a GGUF path fits)
MAX_CONTINUATIONS = 3  # `continue` runs after the first verdict, per debate
InterjectionKind = Literal["interjection", "facts"]  # facts: given with `continue`


def max_seats(format: str | None) -> int:
    """How many debaters (or council members) `format` seats at most."""
    return MAX_COUNCIL if format == "council" else MAX_DEBATERS


def too_long(model: str) -> str:
    """Why `model` is refused for its length, quoting only its start."""
    return (f"the model name {model[:40]!r}… is {len(model):,} characters; a model name is at most "
            f"{MAX_MODEL_CHARS} (provider:model, e.g. openai:gpt-5)")


def new_debate_id() -> str:
    return uuid.uuid4().hex[:10]


def now() -> float:
    return time.time()


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Seat(Frozen):
    """One debater's chair. `label` is what the judge and the other debaters see (A, B, …)."""

    label: str
    role: Role
    model: str = Field(max_length=MAX_MODEL_CHARS)  # provider:model

    @property
    def provider(self) -> str:
        return self.model.split(":", 1)[0]

    @property
    def model_name(self) -> str:
        return self.model.split(":", 1)[1] if ":" in self.model else ""


class DebateSpec(Frozen):
    """Everything needed to run a debate; built by bots/commands.py from any platform."""

    id: str = Field(default_factory=new_debate_id)
    topic: str
    format: Format = "challenge"
    rounds: int = Field(default=2, ge=MIN_ROUNDS, le=MAX_ROUNDS)
    seats: tuple[Seat, ...]
    judge: str = Field(max_length=MAX_MODEL_CHARS)
    tiebreak_judge: str | None = None  # a third family's judge, asked only when the two judge passes split
    judges: tuple[str, ...] = ()  # a jury of MIN_JUDGES..MAX_JUDGES in place of `judge` (orchestrator/debate/jury.py)
    effort: Effort = "medium"
    platform: str = "cli"
    workspace: str | None = None  # Slack team id / Discord guild id; who may recall it (orchestrator.log.Scope)
    channel: str | None = None
    channel_private: bool = False  # a private channel or a DM: recalled only from inside it
    thread: str | None = None
    requested_by: str | None = None
    rematch_of: str | None = None  # the debate this one replays with other models or another format
    # the sources every seat and judge reads (orchestrator/brief/); part of the workflow's input, so a resumed
    # debate reads the same brief. Left out of the JSON when empty: a spec without one reads as it always did.
    brief: Brief = Field(default_factory=Brief)

    @model_serializer(mode="wrap")
    def _without_empty_brief(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        data: dict[str, object] = handler(self)
        if not self.brief.sources and not self.brief.notes:
            data.pop("brief", None)
        return data

    @field_validator("topic")
    @classmethod
    def _topic_fits(cls, value: str) -> str:
        value = scrub_user_text(value).strip()  # no secrets, NUL, terminal escapes or bidi overrides, stored or posted
        if not value:
            raise ValueError("the topic is empty")
        if len(value) > MAX_TOPIC_CHARS:
            raise ValueError(f"the topic is {len(value)} characters; the limit is {MAX_TOPIC_CHARS}")
        return value

    @field_validator("seats")
    @classmethod
    def _enough_seats(cls, value: tuple[Seat, ...], info: ValidationInfo) -> tuple[Seat, ...]:
        most = max_seats(info.data.get("format", "challenge"))
        if not MIN_DEBATERS <= len(value) <= most:
            raise ValueError(f"a debate needs {MIN_DEBATERS} to {most} debaters")
        return value

    @field_validator("judges")
    @classmethod
    def _jury_size(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if value and not MIN_JUDGES <= len(value) <= MAX_JUDGES:
            raise ValueError(f"a jury needs {MIN_JUDGES} to {MAX_JUDGES} judges")
        return value

    def seat(self, label: str) -> Seat:
        for seat in self.seats:
            if seat.label == label:
                return seat
        raise KeyError(label)


class Usage(Frozen):
    input_tokens: int = 0
    output_tokens: int = 0
    duration_ms: int = 0


class Turn(Frozen):
    """One model call's contribution, as the log keeps it."""

    debate_id: str
    round: int
    seat: str  # Seat.label
    role: Role
    kind: str  # opening, challenge, defense, follow-up, statement, summary …
    model: str
    text: str = ""
    started_at: float = Field(default_factory=now)
    duration_ms: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    status: TurnStatus = "ok"
    error: str | None = None
    tokens_estimated: bool = False  # the server reported no usage (a call cut or failed mid-stream, …)


class StanceScore(Frozen):
    seat: str
    stance: str = ""
    strongest_point: str = ""
    fatal_weakness: str = ""
    score: float = 0


class JudgeReading(Frozen):
    """One judge pass's answer: the debaters as seated, in swapped order, or the tie-break judge's."""

    kind: PassKind
    winner: str  # seat label
    reasoning: str = ""
    family: str = ""  # the judge model's family

    @property
    def title(self) -> str:
        return {"seated": "Debaters as seated", "swapped": "Order swapped",
                "tiebreak": f"Tie-break judge ({self.family})"}[self.kind]


JurorStatus = Literal["voted", "undecided", "failed"]


class JurorVote(Frozen):
    """One juror of a jury: its pick, its reasoning and what it cost. The model is kept for the log and
    the team; no judge's prompt ever names one. `undecided`: its two order-swapped passes disagreed, so
    it casts no vote; `failed`: it gave no usable answer."""

    seat: int  # 1-based place on the panel, in the order the judges were named
    model: str
    family: str = ""
    status: JurorStatus = "voted"
    winner: str | None = None  # seat label; None unless voted
    reasoning: str = ""
    passes: tuple[str, ...] = ()  # each usable pass's winner, in the order asked
    same_family: bool = False  # of a debater's family: seated only because no other family was available
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    calls: int = 0  # model calls made, retries included

    @property
    def name(self) -> str:
        return f"Juror {self.seat}"


class Crux(Frozen):
    """A disagreement the outcome turns on, and what evidence would settle it (empty: the judge named none)."""

    disagreement: str
    settle: str = ""

    def text(self) -> str:
        return self.disagreement + (f" — settled by: {self.settle}" if self.settle else "")


class EvidenceCheck(Frozen):
    """One citation a debater made and what checking it found (CONTRACT.md's `evidence_checks`)."""

    seat: str
    quote: str
    source: str
    status: CheckStatus = "not_checked"
    detail: str = ""  # where it was found, or why it could not be read
    round: int = 0  # the round of the turn that cited it (0: not known)
    anchor: str = ""  # the anchor as cited (`§3`, `p.14`), empty for a URL or none given
    found_at: str = ""  # a verified brief quote: the anchor of the section it was found in

    def line(self) -> str:
        """`B, round 1: not found · S1 §2 “the quote” — not in S1 (best match 62% < 90%)`: plain text, no link."""
        cited = f"{self.source} {self.anchor}".strip()
        detail = f" — {self.detail}" if self.detail else ""
        return f"{self.seat}, round {self.round}: {self.status.replace('_', ' ')} · {cited} “{self.quote}”{detail}"


def evidence_counts(checks: Iterable[EvidenceCheck]) -> dict[str, dict[str, int]]:
    """Per seat (in seat order): `cited`, and one count per status."""
    counts: dict[str, dict[str, int]] = {}
    for check in checks:
        seat = counts.setdefault(check.seat, {"cited": 0, "verified": 0, "not_found": 0, "unreachable": 0,
                                              "not_checked": 0})
        seat["cited"] += 1
        seat[check.status] += 1
    return dict(sorted(counts.items()))


def evidence_summary(checks: Iterable[EvidenceCheck]) -> str:
    """One line: `Evidence: 3 cited · 2 verified · 1 not found` (a status none ended in is not named)."""
    total = {"cited": 0, "verified": 0, "not_found": 0, "unreachable": 0, "not_checked": 0}
    for seat in evidence_counts(checks).values():
        for key, value in seat.items():
            total[key] += value
    parts = [f"{total['cited']} cited"] + [f"{total[k]} {k.replace('_', ' ')}" for k in
                                           ("verified", "not_found", "unreachable", "not_checked") if total[k]]
    return "Evidence: " + " · ".join(parts)


class Verdict(Frozen):
    """The judge's decision. `winner` is a seat label; `split` marks disagreeing judge passes.

    `confidence` and `confidence_rule`: computed by the rules of orchestrator/debate/confidence.py, never
    taken from a judge's words; "none" is No clear winner, and then `winner` is only the reading the
    verdict's text came from (`clear_winner` is None). None: logged before it existed.
    `readings` keeps every usable pass's winner and reasoning, so a split shows both sides.
    `cruxes`: the one to three disagreements the outcome turns on, ranked, each with what would settle it.
    """

    winner: str
    split: bool = False
    confidence: Confidence | None = None
    evidence: tuple[str, ...] = ()  # the decisive quotes or turn references, listed before the winner
    readings: tuple[JudgeReading, ...] = ()
    tiebreak_family: str | None = None
    judge_shares_family_with: tuple[str, ...] = ()  # seat labels of debaters of the judge's own family

    @property
    def no_clear_winner(self) -> bool:
        return self.confidence == "none"

    @property
    def clear_winner(self) -> str | None:
        """The winning seat's label; None for No clear winner."""
        return None if self.no_clear_winner else self.winner

    @property
    def uncertain(self) -> bool:
        """Whether surfaces flag the verdict with a warning."""
        return self.split or self.confidence in ("low", "none")

    def crux_lines(self) -> list[str]:
        """`1. <disagreement> — settled by: <evidence>`, most decisive first."""
        return [f"{i}. {crux.text()}" for i, crux in enumerate(self.cruxes, 1)]

    def evidence_lines(self) -> list[str]:
        """Each seat's counts (`A: 3 cited · 2 verified · 1 not found · 0 unreachable`), then each check's line."""
        return [f"{seat}: {c['cited']} cited · {c['verified']} verified · {c['not_found']} not found · "
                f"{c['unreachable']} unreachable" for seat, c in self.evidence_counts().items()] + \
            [check.line() for check in self.evidence_checks]

    def evidence_counts(self) -> dict[str, dict[str, int]]:
        """Per seat (in seat order): citations made, and how many ended verified, not_found, unreachable
        and not_checked (the export's `verdict.evidence_counts`)."""
        return evidence_counts(self.evidence_checks)

    def headline(self) -> str:
        """`No clear winner`, or `Winner: A`."""
        return "No clear winner" if self.no_clear_winner else f"Winner: {self.winner}"

    def confidence_note(self) -> str:
        """How far to trust the winner, in one plain sentence (every surface adds its own markup)."""
        if self.no_clear_winner:
            lead = f"{self.jury_tally()}. " if self.jury else ""
            return " ".join([f"{lead}No clear winner — {self.confidence_rule or 'the judging did not agree'}.",
                             *self._jury_absences()])
        if "evidence" in self.confidence_rule:  # lowered by the evidence checks: that rule is the one to say
            return f"Confidence: {self.confidence} — {self.confidence_rule}."
        if self.jury:
            return self.jury_note()
        if self.tiebreak_family:
            sided = "" if self.confidence == "medium" else ", which chose neither pass's winner"
            return (f"Confidence: {self.confidence} — split; decided by a tie-break judge of family "
                    f"{self.tiebreak_family}{sided}.")
        if self.split:
            both = "; both readings are shown" if self.readings else ""
            return f"Split — low confidence: the judge's two passes (debaters in swapped order) disagreed{both}."
        if self.confidence == "high":
            return "Confidence: high — both judge passes (debaters in swapped order) agreed."
        if self.confidence == "low":
            return "Confidence: low — only one judge pass was usable, so it could not be cross-checked."
        return ""

    @property
    def votes(self) -> tuple[JurorVote, ...]:
        return tuple(j for j in self.jury if j.status == "voted")

    @property
    def agreement(self) -> float | None:
        """The share of the jurors who voted that picked the winner; None without a jury."""
        votes = self.votes
        return sum(1 for j in votes if j.winner == self.winner) / len(votes) if votes else None

    def jury_tally(self) -> str:
        """`Jury 2–1 for A` (votes for the winner, then against)."""
        votes = self.votes
        if self.no_clear_winner:
            if not votes:
                return "Jury undecided: no juror's two passes agreed"
            counts = Counter(j.winner for j in votes)
            sides = " · ".join(f"{side} {n}" for side, n in sorted(counts.items(), key=lambda c: (-c[1], c[0] or "")))
            return f"Jury {'–'.join(str(n) for n in sorted(counts.values(), reverse=True))} ({sides}), no majority"
        if not votes:
            return f"Jury undecided, {self.winner} as seated"
        won = sum(1 for j in votes if j.winner == self.winner)
        return f"Jury {won}–{len(votes) - won} for {self.winner}"

    def jury_note(self) -> str:
        """The jury's count, its confidence and who did not vote, in plain sentences."""
        if not self.jury:
            return ""
        if not self.votes:
            return ("No juror's two order-swapped passes agreed: the verdict follows the jurors' passes with the "
                    "debaters as seated — low confidence.")
        dissent = len(self.dissents())
        how = {
            "high": "high confidence — unanimous",
            "medium": (f"medium confidence — split, {dissent} dissent{'s' if dissent > 1 else ''}" if dissent
                       else "medium confidence — not every juror could decide"),
        }.get(self.confidence or "", "low confidence — " + (
            "a tied vote, decided by the tie rule (the first-named juror's pick among the tied sides)"
            if self.jury_tie else "only one juror's vote could be counted"))
        out = [f"{self.jury_tally()}: {how}.", *self._jury_absences()]
        return " ".join(out)

    def _jury_absences(self) -> list[str]:
        out = []
        failed = sum(1 for j in self.jury if j.status == "failed")
        if failed:
            out.append(f"{failed} of {len(self.jury)} jurors gave no usable answer, so a "
                       f"{len(self.jury) - failed}-judge jury decided.")
        undecided = [j.name for j in self.jury if j.status == "undecided"]
        if undecided:
            out.append(f"{' and '.join(undecided)} did not vote: {'its' if len(undecided) == 1 else 'their'} two "
                       "order-swapped passes disagreed.")
        return out

    def dissents(self) -> tuple[JurorVote, ...]:
        """The jurors who voted for another debater than the winner, each with its reasoning."""
        return tuple(j for j in self.votes if j.winner != self.winner)

    def family_note(self) -> str:
        """Said when the judge shares a model family with a debater; empty otherwise."""
        shared = [j for j in self.jury if j.same_family]
        if shared:
            names = " and ".join(j.name for j in shared)
            return (f"{names} {'is' if len(shared) == 1 else 'are'} of a debater's model family, seated because no "
                    "judge of another family was available; a judge may favour its own family.")
        if not self.judge_shares_family_with:
            return ""
        who = ("debaters " if len(self.judge_shares_family_with) > 1 else "debater ") + " and ".join(
            self.judge_shares_family_with)
        return f"The judge is of the same model family as {who}; a judge may favour its own family."
    reasoning: str = ""
    recommendation: str = ""
    agreements: tuple[str, ...] = ()
    disagreements: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()
    ratings: dict[str, Rating] = Field(default_factory=dict)
    scores: tuple[StanceScore, ...] = ()
    consensus: Literal["yes", "partial", "no"] | None = None
    # a continued debate's verdict (the second, third, …): whether the winner changed from the one before, and why
    changed: bool | None = None
    change_note: str = ""
    jury: tuple[JurorVote, ...] = ()  # a jury's every juror, in panel order; empty: one judge's two passes
    jury_tie: bool = False  # the jury's vote was tied (no majority); before issue 54 the tie rule decided
    confidence_rule: str = ""  # the rule that gave `confidence` (orchestrator/debate/confidence.py)
    cruxes: tuple[Crux, ...] = ()
    evidence_checks: tuple[EvidenceCheck, ...] = ()  # empty until citations are checked


class Interjection(Frozen):
    """A note from the audience for the debaters and the judge: untrusted text, quoted and labelled as
    such in every prompt. It waits (`round` None) until a round starts, which takes at most
    MAX_INTERJECTIONS_PER_ROUND of them; `facts` are what a `continue` request adds."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    debate_id: str
    author: str  # the display name shown with it
    user: str | None = None  # the platform's user id
    platform: str = "cli"
    kind: InterjectionKind = "interjection"
    text: str
    round: int | None = None  # the round whose prompts it reached
    at: float = Field(default_factory=now)

    @field_validator("text", "author")
    @classmethod
    def _clean(cls, value: str) -> str:
        return scrub_user_text(value).strip()

    @field_validator("text")
    @classmethod
    def _fits(cls, value: str) -> str:
        if not value:
            raise ValueError("the note is empty")
        if len(value) > MAX_INTERJECTION_CHARS:
            raise ValueError(f"the note is {len(value)} characters; the limit is {MAX_INTERJECTION_CHARS}")
        return value


class ChannelDefaults(Frozen):
    """What a channel's admins set for the debates started there (`/debate config`); None: the operator's default.
    Every model and number is held to the operator's chat policy when set and again when a debate starts."""

    proposer: str | None = None
    challenger: str | None = None
    judge: str | None = None
    format: Format | None = None
    rounds: int | None = Field(default=None, ge=MIN_ROUNDS, le=MAX_ROUNDS)
    effort: Effort | None = None
    interjections: bool = True
    judges: tuple[str, ...] | None = None  # a jury (`judges=`), held to the chat policy like any seat

    @field_validator("proposer", "challenger", "judge")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        return scrub_user_text(value).strip() if value else value


class Vote(Frozen):
    debate_id: str
    user: str
    choice: str  # agree, disagree, side:<label>
    platform: str = "cli"
    at: float = Field(default_factory=now)


class Outcome(Frozen):
    """How a debate ended, for the final report and the root message."""

    status: DebateStatus
    rounds_completed: int = 0
    rounds_planned: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    warnings: tuple[str, ...] = ()
    error: str | None = None
