"""Closing the window between a post and the record of its id: `PostIntents`.

A post is recorded under its key as soon as the platform answers it (`coalesce.Paced.post`), but a process
killed between the platform taking the post and the log committing its id, or a connection dropped
after the platform took it, leaves a message the log does not know; the next renderer would post it again.
Where the surface posts with keys (`surface.Keyed`), each keyed post is announced in the log first (the key
with the id PENDING, retried until the log takes it: nothing is posted that the log could not track). A key
still PENDING when it is posted again (a renderer resumed after a restart, or a retry after a failed post)
is looked up on the platform first where it can be (`surface.Findable`, Slack): found, it is recorded and
edited, never posted twice. Where it cannot (Discord), it is posted again with the same key, and the
platform answers with the message it took the first time (a nonce it enforces within its window).
Surfaces without keys post as before.
"""

from __future__ import annotations

from typing import Any

from bots.thread.keys import PENDING
from bots.thread.surface import Findable, Keyed, Surface
from orchestrator.events import until_written
from orchestrator.log import DebateLog, DebateNotFoundError


class PostIntents:
    """One debate's keyed posts: `before` each post, `posted` once its id is known. `pending`: the keys
    the log holds as PENDING (a resumed thread's, from the log)."""

    def __init__(self, store: DebateLog, debate_id: str, surface: Surface[Any], pending: set[str] | None = None
                 ) -> None:
        self.store = store
        self.debate_id = debate_id
        self.surface = surface
        self.pending = set(pending or ())

    @property
    def keyed(self) -> bool:
        """Whether a post that failed may be made again under its key (found, or given back by the platform)."""
        return isinstance(self.surface, Keyed)

    async def before(self, key: str, *, in_thread: bool = True) -> str | None:
        """Before posting `key`: the id of the message an earlier post of it left (found on the
        platform), or None once the post may go (its intent in the log)."""
        if not isinstance(self.surface, Keyed):
            return None
        if key in self.pending:  # announced already: the platform may hold it
            return await self.surface.find(key, in_thread=in_thread) if isinstance(self.surface, Findable) else None
        channel = self.surface.thread_channel if in_thread else self.surface.root_channel
        await until_written(lambda: self.store.set_message(self.debate_id, key, self.surface.platform, channel,
                                                           PENDING),
                            f"announcing message {key} of debate {self.debate_id}", gives_up=(DebateNotFoundError,))
        self.pending.add(key)
        return None

    def posted(self, key: str) -> None:
        self.pending.discard(key)
