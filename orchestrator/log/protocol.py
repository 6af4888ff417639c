"""`DebateLog`: the one interface the rest of the program has to the debate log.

SQLite implements it today (store.py); a Postgres log will implement the same methods. Every read
a chat user makes passes a `Scope`, applied inside the query before any limit; `None` is the
operator on the host and sees everything. A start is admitted first (`admit`: the quotas counted
and the debate's row reserved in one transaction, across every process sharing the log). Writes
come from the log sink (every event, before any platform sees it) and from the adapters (votes,
platform message ids, request keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self

from orchestrator.budgets import CallUsage, SpentCall
from orchestrator.log.records import (
    DebateRecord,
    DebateSummary,
    JudgeAgreement,
    MessageRecord,
    Scope,
    SearchHit,
    Tally,
)
from orchestrator.models import ChannelDefaults, DebateSpec, Interjection, Outcome, Turn, Verdict, Vote
from orchestrator.quotas import Quota


class DebateLog(Protocol):
    # -- lifecycle
    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    # -- what starting a debate writes, before anything is posted (raises orchestrator.quotas.QuotaExceeded)
    async def admit(self, spec: DebateSpec, quota: Quota, *, at: float | None = None) -> None: ...

    # -- what a debate writes (through the log sink)
    async def create_debate(self, spec: DebateSpec, *, at: float | None = None) -> None: ...

    async def add_turn(self, turn: Turn) -> int: ...

    async def add_call(self, call: CallUsage) -> None: ...

    async def spent_calls(self, since: float) -> list[SpentCall]:
        """Every model call logged since `since` (debaters' turns and the rest), with whom it counts for."""
        ...

    async def add_notice(self, debate_id: str, level: str, text: str, *, at: float | None = None) -> None: ...

    async def set_verdict(self, debate_id: str, verdict: Verdict, *, at: float | None = None, number: int = 1) -> None:
        """Verdict `number` of the debate (1: the first; 2, 3, …: after each `continue`), replaced if it exists."""
        ...

    async def finish_debate(self, debate_id: str, outcome: Outcome, *, at: float | None = None) -> None: ...

    # -- the start-up sweep: debates whose process ended before their end was logged
    async def running_runners(self, prefix: str) -> list[str]:
        """The runners named `prefix…` with debates the log calls running."""
        ...

    async def fail_runner(self, runner: str, error: str, *, at: float | None = None) -> list[str]:
        """End every debate `runner` left running as failed, with `error`; returns their ids."""
        ...

    # -- what the platforms write
    async def record_vote(self, vote: Vote, scope: Scope | None = None) -> Tally: ...

    async def set_message(
        self, debate_id: str, key: str, platform: str, channel: str | None, message_id: str, *, final: bool = False
    ) -> None: ...

    async def claim_request(self, key: str, *, keep_s: float = 86_400.0) -> bool: ...

    # -- which front renders the threads of a workspace: a lease, claimed or renewed in one statement
    async def claim_workspaces(self, renderer: str, platform: str, workspaces: Sequence[str],
                               lease_s: float) -> list[str]:
        """Of `workspaces` ('' for none) of `platform`, those `renderer` now holds (in the order given):
        each one free, whose lease ran out, or its own gets a lease until now + `lease_s`."""
        ...

    async def release_workspaces(self, renderer: str, platform: str, workspaces: Sequence[str]) -> None: ...

    # -- the team in the loop
    async def add_interjection(self, note: Interjection, *, max_waiting: int) -> int:
        """Queue an audience note for the debate's next round; returns how many now wait (this one
        included). Raises InterjectionRefused when the debate is not running or `max_waiting` wait already."""
        ...

    async def take_interjections(self, debate_id: str, round: int, limit: int) -> list[Interjection]:
        """The notes for `round`'s prompts, oldest first: those taken for it already (a step run again
        gets the same answer) and waiting ones up to `limit` in all, now marked with `round`."""
        ...

    async def begin_continuation(self, debate_id: str, *, at: float | None = None, quota: Quota | None = None,
                                 requested_by: str | None = None, facts: Interjection | None = None) -> int:
        """A completed debate with a verdict goes on: it is running again and its segment count grows;
        returns the new segment's number (2, 3, …). Raises ContinuationRefused with the reason.

        Admitted like a start, in the same transaction: under `quota` (None counts nothing) for
        `requested_by` (None: the operator), who then holds its running slot from `at`; it counts as one of
        their starts this hour. Raises QuotaExceeded naming the limit. `facts`, the new facts given with it,
        are stored only when it begins."""
        ...

    async def set_channel_defaults(
        self, platform: str, workspace: str | None, channel: str, defaults: ChannelDefaults, *, by: str | None = None
    ) -> None: ...

    # -- reads
    async def get_debate(
        self, id_or_prefix: str, scope: Scope | None = None, *, turns: bool = True
    ) -> DebateRecord | None: ...

    async def find_by_message(
        self, platform: str, channel: str, message_id: str, scope: Scope | None = None
    ) -> str | None: ...

    async def get_message(self, debate_id: str, key: str) -> str | None: ...

    async def messages(self, debate_id: str) -> dict[str, MessageRecord]: ...

    async def threads_to_resume(self, platform: str, root_key: str) -> list[str]: ...

    async def live_threads(self, platform: str, root_keys: Sequence[str]) -> list[tuple[str, str]]:
        """(id, workspace: '' for none) of each debate of `platform` whose thread may still change, oldest
        first: running, or ended while one of its `root_keys` records was not final."""
        ...

    async def tally(self, debate_id: str) -> Tally: ...

    async def interjections(self, debate_id: str) -> list[Interjection]: ...

    async def channel_defaults(self, platform: str, workspace: str | None, channel: str) -> ChannelDefaults: ...

    async def history(
        self, limit: int = 20, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> list[DebateSummary]: ...

    async def judge_agreement(
        self, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> JudgeAgreement: ...

    async def search(self, query: str, limit: int = 20, scope: Scope | None = None) -> list[SearchHit]: ...
