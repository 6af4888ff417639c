"""The live thread, written once for every platform: a debate's events become messages in a chat thread.

Where each behaviour lives:

- `sink.py`     `ThreadSink`: the job's sink for one debate. A queue and one worker per debate apply the
                events in order, up to the final event; the root message's status; the verdict.
- `live.py`     `LiveTurns`: turns streamed as they are written, split into parts, edited as text arrives.
- `coalesce.py` latest text wins: `Paced` renders every write when the pacer lets it go; `Latest` keeps
                one message at the newest state set on it; `run_to_completion` for writes that started.
- `pacing.py`   one pacing model (`Limits`, `Pacer`, `Urgency`) to which each platform gives its limits.
- `streams.py`  `Streams`: a turn's messages as the platform's own streams (Slack), where the pacer's
                start budget has room; a surface offers them by having `start_stream`/`append_stream`/
                `stop_stream` (`StreamSurface`).
- `text.py`     splitting to a platform's limit without cutting a table or a fenced code block (every
                platform's), and neutralizing mentions.
- `restart.py`  `Reach`: how a restarted front reaches a live debate's thread from what the log has.
- `keys.py`     the one scheme of message keys: `root`, `turn:{round}:{seat}:{kind}:{part}`, `verdict`,
                `notice:{hash}:{part}`, `round:{round}`, `ended`, `interjection:{id}:{part}` (an audience
                note), and `root:N` / `verdict:N` / `ended:N` for a continuation (segment N). Each message's
                platform id is recorded in the log under its key as the post is answered (part of the
                write: a cancel cannot separate them), and again as `final` once it shows its final text.
- `tail.py`     `FrontTailer`: one task per live debate reading its events from a feed (the workers'
                stream) into its ThreadSink; at front start and every few seconds it renews its leases on
                workspaces and resumes their threads that may still change.
- `start.py`    `start_in_thread`: the one start path (admit, post the root, record it, open the sink,
                enqueue, withdraw a repeat, follow), with its undo; a platform gives a `RootPoster`.
- `vote.py`     `cast_vote`: a vote checked, recorded, and what the clicked verdict message shows next.
- `leases.py`   `WorkspaceLeases`: a front's leases in the log on the workspaces whose threads it renders
                (one front renders a workspace's threads): claimed, renewed and released.

Rendering is idempotent: events may come twice and a restarted front replays each live debate's stream
from its start into `ThreadSink.resume`, which edits the messages the log has and skips the final ones.

A platform plugs in with one module, its surface (`bots/slack/surface.py`, `bots/discord/surface.py`).
What a surface must provide:

1. **Limits**: a function returning `Limits` for its platform (writes per channel and window, whether
   edits count against the channel, an optional workspace-wide edit budget, the shortest interval
   between two edits of a message, a handicap per `Urgency` in each queue, and whether a turn's first
   post waits for text or shows a placeholder). The bot builds one `Pacer` from it per workspace (or
   one per bot, where the platform's limits are per channel only) and shares it with every debate.
2. **A `Surface` object per debate** (see `surface.py`): `platform` (the log's name for it),
   `root_channel`, `thread_channel`, `stream_limit`;
   `post(message, in_thread=)` returning the message's id and `edit(message_id, message, in_thread=)`:
   one platform call each, retrying only a rate limit its client gave up on, never pinging anyone;
   and the rendering of a debate into its own message type: `root(spec, Running | Ended)`,
   `round(event)` (or None), `turn_header(event)`, `neutralize(text)`, `turn(seat, chunk)`,
   `turn_ending(turn)`, `notice(event)`, `verdict(spec, verdict, tally, outcome)`, `ended(outcome)`
   (or None). Optionally native streams (`start_stream`, `append_stream`, `stop_stream`: see
   `streams.StreamSurface`), used when its `Limits` carry `StreamLimits`.
3. **A `RootPoster`** (`start.py`): `post(spec, notes)`, posting the root message (and opening its thread
   where that is a step of its own) and returning a `PostedRoot` (the surface for that thread, the root's
   id, the log's thread id), or raising `RootRefused` with a sentence for the user; `delete(posted)`.
   `start_in_thread(core, tailer, command, origin, poster)` does every other step of a start, in order,
   with its undo (a rematch too). A vote is `vote.cast_vote(core, …)`: the surface renders the
   `VerdictShown` it returns with its own `verdict(...)`. At front start, `tailer.start()`, the tailer
   built with a `reach(record)` that returns a surface and pacer able to write that debate's thread (or
   None), the front's name (`renderer=core.renderer`) and, where it shards, `owns(workspace)`; at stop,
   `tailer.aclose()` (it releases the front's workspaces). A `continue` is
   `bots.loop.start_continuation(core, tailer, …)`: the tailer follows the new segment into the same
   thread (`tailer.follow_segment`), reached the same way. Everything else a surface asks of the core is
   an operation of `Core` (orchestrator/operations.py), never the log. `tests/test_third_surface.py` is a
   whole platform built this way.

Nothing else: pacing, coalescing, splitting, ordering, the message keys and resuming are here.
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
