"""What the debate log takes and returns: scopes, records, summaries, search hits, tallies, errors.

Timestamps are ISO-8601 UTC text in the file (readable in Datasette) and float epoch seconds in
the models; `to_iso` / `from_iso` convert at this boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.brief.models import Brief, Source
from orchestrator.models import MAX_CONTINUATIONS, DebateSpec, DebateStatus, Interjection, Seat, Turn, Verdict

MIN_ID_PREFIX = 4
RECOMMENDATION_SNIPPET_CHARS = 200
HitWhere = Literal["topic", "turn", "recommendation", "source"]  # source: a text of the brief


class StoreError(Exception):
    """A log operation failed in a way the caller can explain to a user."""


class LogUnavailableError(Exception):
    """The log could not be written for a while and the wait for it ended: the message says why, in words a
    user can be shown (the lock another process held past the wait, a server that stayed unreachable).
    Not a StoreError: a later try may succeed."""


class StoreClosedError(StoreError):
    def __init__(self) -> None:
        super().__init__("the debate log is not open; call `await store.start()` first")


class ReadOnlyLogError(StoreError):
    """A write was sent to a log opened for reading only (`debate history`, `show`, …)."""

    def __init__(self) -> None:
        super().__init__("the debate log is open read-only here; only `debate run` and `debate serve` write to it")


_TAKES_NOTES = {"interjection": ("running",), "facts": ("running", "completed")}


class InterjectionRefused(StoreError):
    """An audience note the debate cannot take now; the message says why, for the user."""

    @classmethod
    def check(cls, note: Interjection, status: str, waiting: int, max_waiting: int) -> None:
        """Raise the reason `note` cannot wait for the debate's next round (both logs ask the same questions).

        Facts (given with `continue`) may also wait on the completed debate whose continuation is about to
        begin, and are never turned away for a full queue: the continuation's one round takes them first."""
        if status not in _TAKES_NOTES[note.kind]:
            raise cls(f"Debate `{note.debate_id}` is not running; audience notes reach only a debate in progress.")
        if note.kind == "interjection" and waiting >= max_waiting:
            raise cls(f"{waiting} audience notes already wait for the next round of debate `{note.debate_id}`;"
                      " try again once it starts.")


class ContinuationRefused(StoreError):
    """A `continue` the debate cannot take now; the message says why, for the user."""

    @classmethod
    def check(cls, debate_id: str, status: str, has_verdict: bool, segment: int) -> None:
        """Raise the reason a debate in this state cannot go on (both logs ask the same questions)."""
        if status == "running":
            raise cls(f"Debate `{debate_id}` is still running; continue it once it has a verdict.")
        if status != "completed":
            raise cls(f"Debate `{debate_id}` is {status}; only a completed debate can be continued.")
        if not has_verdict:
            raise cls(f"Debate `{debate_id}` has no verdict to push back on; only a debate with a verdict"
                      " can be continued.")
        if segment - 1 >= MAX_CONTINUATIONS:
            raise cls(f"Debate `{debate_id}` has been continued {MAX_CONTINUATIONS} times, the most a debate"
                      " can be.")


class DebateNotFoundError(StoreError):
    def __init__(self, debate_id: str) -> None:
        super().__init__(f"no debate with id {debate_id!r}")
        self.debate_id = debate_id


class AmbiguousIdError(StoreError):
    """A short id matched more than one debate; the message lists them."""

    def __init__(self, prefix: str, matches: list[str]) -> None:
        shown = ", ".join(matches[:5]) + (" …" if len(matches) > 5 else "")
        super().__init__(f"{prefix!r} matches {len(matches)} debates ({shown}); type more of the id")
        self.prefix = prefix
        self.matches = matches


# ---------------------------------------------------------------------------------------------
# who is asking


class Scope(BaseModel):
    """Where a chat read comes from; the log shows only what that place may see, inside the query.

    Visible: debates of the same platform and workspace (Slack team, Discord guild) started in a
    public channel, plus every debate of the asker's own channel (private channels and DMs are seen
    only from inside them). A debate whose privacy is unknown (logged before it was recorded) counts
    as private. With no workspace (a DM outside any guild) only the asker's channel is visible.
    `channel_private` says where the asker is; it does not change what the asker may see.
    `None` instead of a Scope is the operator on the host (the CLI): everything.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    platform: str
    workspace: str | None = None
    channel: str | None = None
    channel_private: bool = False


# ---------------------------------------------------------------------------------------------
# what the store hands back


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Tally(_Record):
    """Votes on one debate: how many users chose each choice, and how many voted at all."""

    debate_id: str
    counts: dict[str, int] = Field(default_factory=dict)
    total: int = 0

    def count(self, choice: str) -> int:
        return self.counts.get(choice, 0)

    def sides(self, labels: Sequence[str]) -> dict[str, int]:
        """Side votes ("convinced by …") per seat label, most first (ties in seat order)."""
        counts = {label: self.count(f"side:{label}") for label in labels}
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))

    def team_side(self, labels: Sequence[str]) -> str | None:
        """The seat most voters sided with; None with no side votes or a tie at the top."""
        ranked = list(self.sides(labels).items())
        if not ranked or ranked[0][1] == 0 or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
            return None
        return ranked[0][0]

    def team_text(self, labels: Sequence[str]) -> str:
        """The team's side votes in a few words: "3–1 for B", "tied 2–2", "no side votes yet"."""
        sides = self.sides(labels)
        if not any(sides.values()):
            return "no side votes yet"
        score = "–".join(str(n) for n in sides.values())
        side = self.team_side(labels)
        return f"{score} for {side}" if side else f"tied {score}"


class JudgeAgreement(_Record):
    """How often the team's side votes went against the judge, over debates with a verdict and at least
    one side vote: `disagreed` counts those where the judge's winner had fewer side votes than another seat."""

    debates: int = 0
    disagreed: int = 0

    @property
    def rate(self) -> float | None:
        return self.disagreed / self.debates if self.debates else None


class TurnRecord(Turn):
    """A stored turn: the engine's Turn plus its row id (the FTS rowid) and estimated cost."""

    id: int
    cost_usd: float | None = None


class NoticeRecord(_Record):
    at: float
    level: str
    text: str


class TokenTotals(_Record):
    debate_id: str
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None when any turn used a model with an unknown price


class MessageRecord(_Record):
    """One platform message a debate created, under its key (`root`, `turn:…`, `verdict`, …)."""

    key: str
    platform: str | None = None
    channel: str | None = None
    message_id: str
    final: bool = False  # it shows its final text: a renderer that resumes the debate leaves it alone


class DebateRow(_Record):
    """The columns of one `debates` row that every view of a debate carries."""

    id: str
    topic: str
    format: str
    status: DebateStatus
    created_at: float
    finished_at: float | None = None
    platform: str | None = None
    workspace: str | None = None  # Slack team id / Discord guild id
    channel: str | None = None
    channel_private: bool | None = None  # None: logged before privacy was recorded
    thread: str | None = None
    requested_by: str | None = None
    runner: str | None = None  # the process that runs it: "serve:<host>" or "cli:<host>:<pid>"
    rounds_planned: int = 0
    rounds_completed: int = 0
    cost_usd: float | None = None
    error: str | None = None
    segment: int = 1  # 2, 3, …: a `continue` started that segment (the last one)
    rematch_of: str | None = None


class DebateSummary(DebateRow):
    """One line of `debate history`."""

    winner: str | None = None  # seat label
    winner_model: str | None = None
    split: bool = False
    confidence: str | None = None  # the latest verdict's: high, medium, low, none (No clear winner)
    recommendation: str | None = None  # at most RECOMMENDATION_SNIPPET_CHARS characters
    votes: int = 0
    models: tuple[str, ...] = ()  # the debaters' models in seat order (filled for rematches)


class DebateRecord(DebateRow):
    """Everything the log knows about one debate."""

    effort: str | None = None
    judge: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    warnings: tuple[str, ...] = ()
    spec: DebateSpec | None = None
    seats: tuple[Seat, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    verdict: Verdict | None = None  # the latest
    verdicts: tuple[Verdict, ...] = ()  # every verdict, first to latest (more than one after `continue`)
    notices: tuple[NoticeRecord, ...] = ()
    interjections: tuple[Interjection, ...] = ()
    rematches: tuple[DebateSummary, ...] = ()  # debates started as rematches of this one, oldest first
    tally: Tally
    sources: tuple[Source, ...] = ()  # the brief, as the `sources` table holds it (a `continue` may add to it)

    @property
    def brief(self) -> Brief:
        """The debate's brief as it stands now: every source, the ones a `continue` added included."""
        return Brief(sources=self.sources)

    def seat(self, label: str) -> Seat | None:
        return next((s for s in self.seats if s.label == label), None)


class SearchHit(_Record):
    """A debate that matched a search, at its best-ranked place."""

    debate_id: str
    topic: str
    where: HitWhere  # "recommendation" covers the verdict's recommendation and reasoning
    snippet: str  # the match between [ and ]
    created_at: float
    status: DebateStatus
    rank: float  # bm25: lower is better


# ---------------------------------------------------------------------------------------------
# time at the boundary


def to_iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")


def from_iso(text: str | None) -> float | None:
    if not text:
        return None
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


