"""The live thread, written once for every platform: a debate's events become messages in a chat thread.

`sink.py` (`ThreadSink`, one debate's events applied in order), `live.py` (turns streamed and edited as text
arrives), `coalesce.py` (latest text wins), `pacing.py` (one pacing model, each platform's limits), `streams.py`
(Slack's native streams), `text.py` (splitting to a platform's limit, mentions neutralized), `keys.py` (the message
keys the log records each post under), `restart.py` and `tail.py` (a restarted front reaching and resuming live
threads), `start.py` (the one start path, with its undo), `vote.py`, `leases.py` (which front renders a workspace).

Rendering is idempotent: events may come twice and a restarted front replays each live debate's stream from its
start into `ThreadSink.resume`, which edits the messages the log has and skips the final ones. A platform plugs in
with one module, its surface (`bots/slack/surface.py`, `bots/discord/surface.py`): its `Limits`, a `Surface` per
debate and a `RootPoster` (docs/platform-surface.md; tests/test_third_surface.py is a whole platform built so).
Pacing, coalescing, splitting, ordering, the message keys and resuming are all here.
"""

from bots.thread.coalesce import Latest, Paced, run_to_completion
from bots.thread.keys import (
    ROOT,
    VERDICT,
    interjection_key,
    notice_key,
    root_key,
    round_key,
    turn_key,
    verdict_key,
)
from bots.thread.live import LiveTurns
from bots.thread.pacing import STRICT, Limits, Pacer, Pacers, Urgency
from bots.thread.restart import Reach
from bots.thread.sink import ThreadSink
from bots.thread.surface import Ended, RootState, Running, Surface
from bots.thread.tail import Feed, FrontTailer

__all__ = [
    "ROOT",
    "STRICT",
    "VERDICT",
    "Ended",
    "Feed",
    "FrontTailer",
    "Latest",
    "Limits",
    "LiveTurns",
    "Paced",
    "Pacer",
    "Pacers",
    "Reach",
    "RootState",
    "Running",
    "Surface",
    "ThreadSink",
    "Urgency",
    "interjection_key",
    "notice_key",
    "root_key",
    "round_key",
    "run_to_completion",
    "turn_key",
    "verdict_key",
]
