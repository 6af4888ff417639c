"""The SQLite debate log: one file, one database thread, full-text recall, votes.

Work runs in the thread that owns the connection (writer_thread.py). Reads go through the same
thread: a read is a few indexed lookups, and one connection means every read sees every write that
was awaited before it. The SQL lives in reads.py, search.py and writes.py; what the log returns
lives in records.py. Everything here is the `DebateLog` protocol (protocol.py); nothing outside
the package sends SQL of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from sqlite_utils import Database

from orchestrator.budgets import CallUsage, SpentCall
from orchestrator.log import reads, renderers, spend, team, writes
from orchestrator.log import search as fts
from orchestrator.log.records import (
    DebateRecord,
    DebateSummary,
    JudgeAgreement,
    MessageRecord,
    Scope,
    SearchHit,
    Tally,
)
from orchestrator.log.writer_thread import DatabaseThread
from orchestrator.models import ChannelDefaults, DebateSpec, Interjection, Outcome, Turn, Verdict, Vote, now
from orchestrator.quotas import Quota

T = TypeVar("T")


class Store:
    """The SQLite `DebateLog`. `async with Store(path) as store:` or `start()` / `close()`.

    `runner` names the process that runs the debates this handle creates ("serve:<host>",
    "cli:<host>:<pid>"), recorded on the debates it admits or creates. `readonly=True`
    opens the file for reading only: no migration, and every write raises ReadOnlyLogError.
    """

    def __init__(self, path: str | Path, *, runner: str | None = None, readonly: bool = False) -> None:
        self.path = Path(path)
        self.runner = runner
        self._db = DatabaseThread(self.path, readonly=readonly)

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the file in the database thread (a writer: WAL, pending migrations)."""
        await self._db.start()

    async def close(self) -> None:
        """Finish every queued job, then close the connection (checkpointing the WAL)."""
        await self._db.close()

    async def __aenter__(self) -> Store:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _write(self, fn: Callable[[Database], T]) -> T:
        return await self._db.submit(fn, write=True)

    async def _read(self, fn: Callable[[Database], T]) -> T:
        return await self._db.submit(fn, write=False)

    # -- writes ---------------------------------------------------------------------------------

    async def create_debate(self, spec: DebateSpec, *, at: float | None = None) -> None:
        """Insert the debate (status "running", owned by this runner) and its seats. When it is there already
        (admitted, or a repeat) only where it landed is filled in: workspace, privacy, thread, spec."""
        await self._write(writes.create_debate(spec, at if at is not None else now(), self.runner))

    async def admit(self, spec: DebateSpec, quota: Quota, *, at: float | None = None) -> None:
        """Reserve the debate's place under `quota`: count and insert it (running, this runner's) in one
        transaction, or raise QuotaExceeded and log nothing. Its DebateStarted later fills in the thread."""
        await self._write(writes.admit(spec, quota, at if at is not None else now(), self.runner))

    async def add_turn(self, turn: Turn) -> int:
        """Log one turn (ok, failed or empty) with its estimated cost; returns its row id."""
        return await self._write(writes.add_turn(turn))

    async def add_call(self, call: CallUsage) -> None:
        """Log a model call that is not a debater's turn (a judge pass, a summary) with its estimated cost."""
        await self._write(spend.add_call(call))

    async def spent_calls(self, since: float) -> list[SpentCall]:
        """Every model call logged since `since`, with whom it counts for (orchestrator/budgets.py)."""
        return await self._read(spend.spent_calls(since))

    async def add_notice(self, debate_id: str, level: str, text: str, *, at: float | None = None) -> None:
        await self._write(writes.add_notice(debate_id, level, text, at if at is not None else now()))

    async def set_verdict(self, debate_id: str, verdict: Verdict, *, at: float | None = None, number: int = 1) -> None:
        """Store verdict `number` (1, then one per `continue`); a repeated write of that number replaces it."""
        await self._write(writes.set_verdict(debate_id, verdict, at if at is not None else now(), number))

    async def finish_debate(self, debate_id: str, outcome: Outcome, *, at: float | None = None) -> None:
        """Record how the debate ended. Tokens and cost fall back to the sum over its turns."""
        await self._write(writes.finish_debate(debate_id, outcome, at if at is not None else now()))

    async def running_runners(self, prefix: str) -> list[str]:
        """The runners named `prefix…` (e.g. "cli:<host>:") with debates the log calls running."""
        return await self._read(writes.running_runners(prefix))

    async def fail_runner(self, runner: str, error: str, *, at: float | None = None) -> list[str]:
        """End every debate `runner` left running as failed, with `error`; returns their ids."""
        return await self._write(writes.fail_runner(runner, error, at if at is not None else now()))

    async def record_vote(self, vote: Vote, scope: Scope | None = None) -> Tally:
        """One vote per user and debate (voting again changes the choice); returns the new tally.

        DebateNotFoundError when the debate is unknown or outside `scope`.
        """
        return await self._write(writes.record_vote(vote, scope))

    async def set_message(self, debate_id: str, key: str, platform: str, channel: str | None, message_id: str,
                          *, final: bool = False) -> None:
        """Remember which platform message `key` (e.g. "root", "turn:2:B") became; `final` once it shows
        its final text (that sticks until the key names another message)."""
        await self._write(writes.set_message(debate_id, key, platform, channel, message_id, final))

    async def claim_request(self, key: str, *, keep_s: float = 86_400.0) -> bool:
        """True the first time `key` (a platform's request id) is claimed; False for any repeat.
        Keys older than `keep_s` are forgotten, so the table stays small."""
        return await self._write(writes.claim_request(key, keep_s))

    async def claim_workspaces(self, renderer: str, platform: str, workspaces: Sequence[str],
                               lease_s: float) -> list[str]:
        """Of `workspaces`, those whose threads `renderer` now renders (see orchestrator/log/renderers.py)."""
        if not workspaces:
            return []
        return await self._write(renderers.claim_workspaces(renderer, platform, list(workspaces), lease_s, now()))

    async def release_workspaces(self, renderer: str, platform: str, workspaces: Sequence[str]) -> None:
        if workspaces:
            await self._write(renderers.release_workspaces(renderer, platform, list(workspaces)))

    # -- the team in the loop ---------------------------------------------------------------------

    async def add_interjection(self, note: Interjection, *, max_waiting: int) -> int:
        """Queue an audience note for the debate's next round; how many now wait (this one included).
        InterjectionRefused unless the debate is running (facts: or completed) and fewer than `max_waiting`
        notes wait; the same note id sent again is stored once."""
        return await self._write(team.add_interjection(note, max_waiting))

    async def take_interjections(self, debate_id: str, round: int, limit: int) -> list[Interjection]:
        """The notes for `round`, oldest first: those it took already, topped up with waiting ones to `limit`."""
        return await self._write(team.take_interjections(debate_id, round, limit))

    async def begin_continuation(self, debate_id: str, *, at: float | None = None, quota: Quota | None = None,
                                 requested_by: str | None = None, facts: Interjection | None = None) -> int:
        """A completed debate with a verdict runs again as segment 2, 3, …, admitted under `quota` for
        `requested_by`; returns that number. ContinuationRefused or QuotaExceeded (with the reason) otherwise."""
        return await self._write(team.begin_continuation(debate_id, quota, requested_by, facts,
                                                         at if at is not None else now()))

    async def set_channel_defaults(
        self, platform: str, workspace: str | None, channel: str, defaults: ChannelDefaults, *, by: str | None = None
    ) -> None:
        await self._write(team.set_channel_defaults(platform, workspace, channel, defaults, by, now()))

    async def interjections(self, debate_id: str) -> list[Interjection]:
        return await self._read(team.interjections(debate_id))

    async def channel_defaults(self, platform: str, workspace: str | None, channel: str) -> ChannelDefaults:
        """What the channel's admins set (`ChannelDefaults()` when nothing was)."""
        return await self._read(team.channel_defaults(platform, workspace, channel))

    # -- reads ----------------------------------------------------------------------------------

    async def get_debate(
        self, id_or_prefix: str, scope: Scope | None = None, *, turns: bool = True
    ) -> DebateRecord | None:
        """One debate by id or unique prefix (>= 4 chars) among those `scope` sees; None if unknown.

        AmbiguousIdError when a prefix matches several visible debates (it lists only those).
        `turns=False` leaves out turns and notices: enough for a vote or a quote. Its rematches are
        those `scope` sees too.
        """

        def fn(db: Database) -> DebateRecord | None:
            debate_id = reads.resolve_id(db, id_or_prefix, scope)
            return None if debate_id is None else reads.load_record(db, debate_id, turns=turns, scope=scope)

        return await self._read(fn)

    async def find_by_message(
        self, platform: str, channel: str, message_id: str, scope: Scope | None = None
    ) -> str | None:
        """The id of the debate that posted `message_id` in `channel`, or whose thread it roots."""
        return await self._read(lambda db: reads.find_by_message(db, platform, channel, message_id, scope))

    async def get_message(self, debate_id: str, key: str) -> str | None:
        def fn(db: Database) -> str | None:
            row = db.execute(
                "select message_id from messages where debate_id = ? and key = ?", [debate_id, key]
            ).fetchone()
            return row[0] if row else None

        return await self._read(fn)

    async def messages(self, debate_id: str) -> dict[str, MessageRecord]:
        """Every message recorded for the debate, by key, with whether it is final."""
        return await self._read(lambda db: reads.messages(db, debate_id))

    async def threads_to_resume(self, platform: str, root_key: str) -> list[str]:
        """Debates of `platform` still running, or ended before their root message (`root_key`) was final."""
        return await self._read(lambda db: reads.threads_to_resume(db, platform, root_key))

    async def live_threads(self, platform: str, root_keys: Sequence[str]) -> list[tuple[str, str]]:
        """(id, workspace) of the debates of `platform` whose thread may still change, in one read."""
        return await self._read(lambda db: renderers.live_threads(db, platform, list(root_keys)))

    async def tally(self, debate_id: str) -> Tally:
        return await self._read(lambda db: reads.tally(db, debate_id))

    async def history(
        self, limit: int = 20, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> list[DebateSummary]:
        """Newest first among what `scope` sees, optionally for one platform and channel."""
        return await self._read(lambda db: reads.history(db, limit, scope, platform, channel))

    async def judge_agreement(
        self, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> JudgeAgreement:
        """How often the team's side votes disagreed with the judge, over what `scope` sees."""
        return await self._read(lambda db: reads.judge_agreement(db, scope, platform, channel))

    async def search(self, query: str, limit: int = 20, scope: Scope | None = None) -> list[SearchHit]:
        """Full-text search over topics, turns and verdicts, best bm25 first, one hit per debate.

        User text is always quoted (every token becomes a literal phrase), so FTS syntax in the
        query — `AND (cats`, `"`, `*`, `NEAR(` — is searched for, never interpreted. The scope is
        part of each ranking query, so a workspace's own matches are ranked, not the log's.

        Ranking trade-off: bm25 costs time per matching row, so in each FTS table only the
        newest `search.SEARCH_RECENT_MATCHES` matches compete (FTS5 walks its index newest-first and
        stops there). A query with fewer matches than that — rare words, most multi-word
        queries — is ranked over the whole log; a very common one returns the best among its
        recent matches, not the best of all time. Scores stay comparable either way (bm25's
        IDF counts every match). Ties go to the newer row; snippets are built for the final
        hits only.
        """
        if not query.strip() or limit <= 0:
            return []
        return await self._read(lambda db: fts.search(db, query, limit, scope))
