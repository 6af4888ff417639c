"""4. Pacing: 20 debates streaming at once into one Slack channel, and into one Discord channel, against
peers that enforce the platforms' write limits: 429s received, turn text lost, and the delay from the
model's first token to the first visible text of that turn.

Slack: 20 signed `/debate` POSTs into channel C1 through the real HTTP-mode app; the Slack peer enforces
one chat.postMessage per second per channel and 50 chat.update per minute per workspace. Discord: 20
INTERACTION_CREATE `/debate` commands in one channel through the real discord.py client; each debate
gets its own thread on its root message (the product's design), the parent channel carries the 20
root messages' status edits, and the Discord peer enforces 5 writes per 5 s per channel (threads too).

Time is scaled by SCALE (limits, pacer settings and the LLM's latency and rate all run SCALE× faster),
so a run fits the 2-minute budget; delays are reported both measured and in platform seconds (× SCALE).
The durable path's own timings (the stream's text batches, the front's polling of the stream) are
scaled too (`--unscaled-stream` keeps them in real seconds: at ×4 a 1 s batch then counts as 4 platform s).
"Text lost" compares every turn's text in the store with what the peer finally shows in its message.

Modes (`--mode`, several in one run): `serve` (the front and the worker in one process, as `debate serve`
runs: the text goes through the workflow's DBOS stream) and `engine` (the same front, sink and pacer fed
by the engine in this process, no DBOS: how the bots ran before debates were durable). Each turn's delay
is split (pacing_trace.Trace): model → stream write (serve) → the front's sink → the platform; beside it
the floor, the earliest the channel's write limit lets each first text show (`pacing_trace.floor`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal
from unittest import mock

from bench.common import CHALLENGER, JUDGE, PROPOSER, Table, bench_settings, percentile
from bench.llm_peer import PeerProcess, PeerStats, ReplyPlan
from bench.pacing_trace import PROBE_WORDS, Delays, Trace, engine_feed
from bots.slack.markdown import neutralize_markdown
from bots.slack.surface import slack_limits
from bots.thread import turn_key
from bots.thread.text import neutralize_discord
from orchestrator.app import Core
from orchestrator.log import DebateRecord, Store
from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.slack_api import SIGNING_SECRET, Call, Limits, SlackAPIPeer, SlackBot, slash_body

NAME = "pacing"
SETTLE_S = 100.0


def settle_s(scale: float) -> float:
    """How long the debates may take to finish: SETTLE_S at 4× speed, longer when time runs slower."""
    return SETTLE_S * max(1.0, 4.0 / scale)


def _words(text: str) -> str:
    return " ".join(text.split())


def _first_words(text: str, n: int = PROBE_WORDS) -> str:
    return " ".join(text.split()[:n])


def _first_token_times(stats: PeerStats, latency_s: float) -> dict[tuple[int, str], float]:
    """(debate tag, model) → when the peer sent that debater call's first token (CLOCK_MONOTONIC)."""
    out: dict[tuple[int, str], float] = {}
    for call in stats.calls:
        tag, kind, started, model = call[0], call[1], call[6], call[7]
        if kind == "debater":
            out[(tag, model)] = started + latency_s
    return out


def _tag(record: DebateRecord) -> int:
    return int(record.topic.split("#", 1)[1][:6])


async def _records(store: Store) -> list[DebateRecord]:
    records = []
    for summary in await store.history(1000):
        record = await store.get_debate(summary.id)
        if record is not None:
            records.append(record)
    return records


async def _messages(store: Store, debate_id: str) -> dict[str, str]:
    """Every message key of the debate, read from the file on a connection of its own."""

    def fn() -> dict[str, str]:
        with closing(sqlite3.connect(store.path)) as db:
            rows = db.execute("select key, message_id from messages where debate_id = ?", [debate_id]).fetchall()
        return {key: message_id for key, message_id in rows}

    return await asyncio.to_thread(fn)


def _turn_messages(keys: dict[str, str], turn: Any) -> list[str]:
    """The ids of a turn's messages, part 0 first (`bots.thread.keys`)."""
    ids, part = [], 0
    while (key := turn_key(turn.round, turn.seat, turn.kind, part)) in keys:
        ids.append(keys[key])
        part += 1
    return ids


async def _wait(done: Callable[[], Awaitable[bool]], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await done():
            return True
        await asyncio.sleep(0.25)
    return False


SLACK_WRITES = ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream")


def _shown_over_time(calls: list[Call]) -> dict[str, list[tuple[float, str]]]:
    """Each message's markdown after every write that changed it: posts and updates send it whole, a
    stream's start and appends add to it."""
    shown: dict[str, list[tuple[float, str]]] = {}
    for call in calls:
        if not call.ok or call.method not in SLACK_WRITES:
            continue
        ts = str(call.params.get("ts") or call.result.get("ts") or "")
        before = shown[ts][-1][1] if shown.get(ts) else ""
        text = before + call.markdown if call.method in ("chat.appendStream", "chat.stopStream") else call.markdown
        shown.setdefault(ts, []).append((call.at, text))
    return shown


Mode = Literal["serve", "engine"]
MODES: tuple[Mode, ...] = ("serve", "engine")


@contextmanager
def durable_timing(scale: float, mode: Mode) -> Iterator[None]:
    """The durable path's own timings run `scale`× faster too: the stream's text batches and the front's
    polling of the stream (`scale` 1: as shipped)."""
    if mode != "serve" or scale == 1:
        yield
        return
    from orchestrator.durable import feed, workflow

    pace = workflow.STREAM_PACE
    scaled = replace(pace, interval=pace.interval / scale, first_wait=pace.first_wait / scale)
    with mock.patch.object(workflow, "STREAM_PACE", scaled), \
            mock.patch.object(feed, "POLL_SECONDS", feed.POLL_SECONDS / scale):
        yield


def stream_interval() -> float:
    from orchestrator.durable.workflow import STREAM_PACE

    return STREAM_PACE.interval


async def bench_slack(n: int, scale: float, plan: ReplyPlan, tmp: Path, *, streams: bool = False,
                      mode: Mode = "serve", stream_scale: float | None = None) -> dict[str, Any]:
    """`streams`: turns as Slack's native streams where the Tier 2 start budget has room (else posts and
    updates), against a peer enforcing that budget (20 a minute) and Tier 4 appends (100 a minute)."""
    limits = slack_limits(post_interval=1.0 / scale, updates=45, window=60.0 / scale, edit_interval=1.0 / scale,
                          active_horizon=5.0 / scale, streams=streams)
    peer_limits = Limits(post_interval=1.0 / scale, updates=50, window=60.0 / scale, stream_calls=20,
                         stream_appends=100, stream_ttl=300.0 / scale)
    trace = Trace()
    async with PeerProcess(plan) as llm, SlackAPIPeer(peer_limits) as slack:
        settings = bench_settings(tmp / f"slack-{int(streams)}-{mode}.db", llm.openai_base_url,
                                  llm.anthropic_base_url, SLACK_BOT_TOKEN="xoxb-bench-token",
                                  SLACK_SIGNING_SECRET=SIGNING_SECRET, SLACK_API_BASE_URL=slack.base_url)
        with trace.installed(), durable_timing(scale if stream_scale is None else stream_scale, mode), \
                engine_feed(mode == "engine") as feed:
            async with SlackBot(settings, limits=limits, role="front" if mode == "engine" else "serve") as bot:
                if mode == "engine":
                    feed.bind(bot.core)
                bodies = [slash_body(f"Bench debate #{i:06d}: Kafka or RabbitMQ for the audit log? --rounds 1 "
                                     f"--vs {PROPOSER},{CHALLENGER} --judge {JUDGE}", channel="C1", user=f"U{i}",
                                     response_url=slack.response_url(f"r{i}"), trigger=f"pace-{i}")
                          for i in range(n)]
                await asyncio.gather(*(bot.post(b) for b in bodies))
                finished = await _wait(lambda: _all_done(bot.core, n), settle_s(scale))
                await asyncio.wait_for(bot.settle(), 30) if finished else await bot.runtime.shutdown()
                records = await _records(bot.core.store)
                keys = {r.id: await _messages(bot.core.store, r.id) for r in records}
        stats = await llm.stop()
    first_token = _first_token_times(stats, plan.latency_s)
    shown_at = _shown_over_time(slack.calls)
    lost, delays, turns, turn_writes, by_post = 0, Delays(), 0, 0, 0
    for record in records:
        for turn in record.turns:
            turns += 1
            want = _words(neutralize_markdown(turn.text))
            ts_list = _turn_messages(keys[record.id], turn)
            shown = _words(" ".join(slack.messages[("C1", ts)].markdown for ts in ts_list
                                    if ("C1", ts) in slack.messages))
            if not want or want not in shown:
                lost += 1
            turn_writes += sum(len(shown_at.get(ts, ())) for ts in ts_list)
            probe = _first_words(neutralize_markdown(turn.text), PROBE_WORDS)
            seen = [at for ts in ts_list for at, text in shown_at.get(ts, ()) if probe in text]
            started = first_token.get((_tag(record), turn.model.split(":", 1)[1]))
            by_post += bool(ts_list and shown_at.get(ts_list[0]) and probe in shown_at[ts_list[0]][0][1])
            if seen and started is not None:
                delays.add(started, plan, trace, (record.id, turn.round, turn.seat, turn.kind), turn.text,
                           min(seen), "C1")
    methods = [c.method for c in slack.calls if c.ok]
    return {"debates": len(records), "completed": sum(r.status == "completed" for r in records),
            "finished": finished, "turns": turns, "lost": lost, "delays": delays,
            "floor": delays.floor(1, peer_limits.post_interval or 0.0, {"C1": _root_posts(slack.calls)}),
            "floor_texts_only": delays.floor(1, peer_limits.post_interval or 0.0), "interval": 1.0 / scale,
            "429": sum(1 for c in slack.calls if c.status == 429),
            "writes": sum(1 for c in slack.calls if c.method in SLACK_WRITES),
            "turn_writes": turn_writes, "streams": methods.count("chat.startStream"), "by_post": by_post,
            "refused": sum(1 for c in slack.calls if c.method == "chat.startStream" and not c.ok)}


def _root_posts(calls: list[Call]) -> list[float]:
    """When each debate's root message went: a channel post its debate's text cannot precede."""
    return [c.at for c in calls if c.ok and c.method == "chat.postMessage" and not c.params.get("thread_ts")]


async def _all_done(core: Core, n: int) -> bool:
    rows = await core.store.history(1000)
    return len(rows) >= n and all(r.status != "running" for r in rows)


async def bench_discord(n: int, scale: float, plan: ReplyPlan, tmp: Path, *, mode: Mode = "serve",
                        stream_scale: float | None = None) -> dict[str, Any]:
    from bots.discord import DebateBot, point_discord_at
    from bots.discord.surface import discord_limits

    pacing = discord_limits(writes=5, window=5.0 / scale, edit_interval=1.2 / scale)
    trace = Trace()
    async with PeerProcess(plan) as llm, DiscordPeer(rate_limit=(5, 5.0 / scale)) as peer:
        settings = bench_settings(tmp / f"discord-{mode}.db", llm.openai_base_url, llm.anthropic_base_url,
                                  DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url,
                                  DISCORD_GATEWAY_URL=peer.gateway_url)
        with trace.installed(), durable_timing(scale if stream_scale is None else stream_scale, mode), \
                engine_feed(mode == "engine") as feed:
            core = await Core.open(settings, "front" if mode == "engine" else "serve")
            if mode == "engine":
                feed.bind(core)
            point_discord_at(settings)
            bot = DebateBot(core, pacing=pacing, guild_ready_timeout=0.05)
            finished = False
            try:
                async with bot:
                    runner = asyncio.create_task(bot.start(TOKEN))
                    await asyncio.wait_for(bot.wait_until_ready(), 20)
                    options = {"rounds": 1, "proposer": PROPOSER, "challenger": CHALLENGER, "judge": JUDGE}
                    interactions = []
                    for i in range(n):
                        topic = f"Bench debate #{i:06d}: Kafka or RabbitMQ for the audit log?"
                        interactions.append(await peer.dispatch_interaction(
                            peer.slash_command("debate", {"topic": topic, **options},
                                               user_id=f"7400000000000{i:05d}")))
                    quiet = 0

                    async def settled() -> bool:
                        # every command answered, nothing running, no sink still rendering, twice in a row: a
                        # debate that failed to start never reaches the log, so "n debates logged" can't be
                        # the test
                        nonlocal quiet
                        idle = all(r.callback_at is not None for r in interactions) and not bot.output._sinks
                        quiet = quiet + 1 if idle else 0
                        return quiet >= 4

                    await _wait(settled, settle_s(scale))
                    finished = await _discord_done(core, bot, n)
                    records = await _records(core.store)
                    keys = {r.id: await _messages(core.store, r.id) for r in records}
                    await bot.close()
                    await asyncio.gather(runner, return_exceptions=True)
            finally:
                await core.close()
        stats = await llm.stop()
    first_token = _first_token_times(stats, plan.latency_s)
    lost, delays, turns = 0, Delays(), 0
    for record in records:
        thread = record.thread or ""
        for turn in record.turns:
            turns += 1
            ids = _turn_messages(keys[record.id], turn)
            shown = _words(" ".join(e.get("description", "") for m in ids for e in peer.messages.get(m, {})
                                    .get("embeds", [])))
            want = _words(neutralize_discord(turn.text))
            if not want or want not in shown:
                lost += 1
            probe = _first_words(neutralize_discord(turn.text), PROBE_WORDS)
            seen = [c.at for c in peer.calls if c.status < 300 and c.method in ("POST", "PATCH")
                    and c.path.startswith(f"/channels/{thread}/messages") and isinstance(c.body, dict)
                    and any(probe in e.get("description", "") for e in c.body.get("embeds") or [])]
            started = first_token.get((_tag(record), turn.model.split(":", 1)[1]))
            if seen and started is not None:
                delays.add(started, plan, trace, (record.id, turn.round, turn.seat, turn.kind), turn.text,
                           min(seen), thread)
    return {"debates": len(records), "completed": sum(r.status == "completed" for r in records),
            "finished": finished, "turns": turns, "lost": lost, "delays": delays,
            "floor": delays.floor(5, 5.0 / scale), "interval": 1.0 / scale,
            "429": sum(1 for c in peer.calls if c.status == 429),
            "writes": sum(1 for c in peer.calls if c.is_write)}


async def _discord_done(core: Core, bot: Any, n: int) -> bool:
    return await _all_done(core, n) and not bot.output._sinks


def _rows(table: Table, platform: str, result: dict[str, Any], n: int, scale: float) -> None:
    table.add(f"{platform}: debates completed", f"{result['completed']}/{n}", f"{n}",
              "pass" if result["completed"] == n and result["finished"] else "miss")
    table.add(f"{platform}: 429s received ({result['writes']} writes)", f"{result['429']}")
    table.add(f"{platform}: turns whose text is lost", f"{result['lost']} of {result['turns']}", "0",
              "pass" if result["lost"] == 0 and result["turns"] else "miss")
    delays: Delays = result["delays"]
    if not delays.shown:
        table.add(f"{platform}: first text p99", "not measured", "", "miss")
        return
    total = delays.total
    p50, p99 = percentile(total, 50) * scale, percentile(total, 99) * scale
    floor_p99 = percentile(result["floor"], 99) * scale
    interval = result["interval"] * scale
    if "floor_texts_only" in result:
        table.add(f"{platform}: floor p99, first texts alone (not counting the root posts)",
                  f"{percentile(result['floor_texts_only'], 99) * scale:.1f} s")
    table.add(f"{platform}: floor p99 (the channel's limit, first texts in the order made"
              f"{', around the root posts' if 'floor_texts_only' in result else ''})", f"{floor_p99:.1f} s")
    table.add(f"{platform}: first text p50 (platform s)", f"{p50:.1f} s")
    table.check(f"{platform}: first text p99 (platform s)", p99, ".1f", floor_p99 + interval, " s")
    for leg, values in delays.legs().items():
        if values:
            table.add(f"{platform}:   {leg} p50 / p99", f"{percentile(values, 50) * scale:.2f} / "
                      f"{percentile(values, 99) * scale:.2f} s")


LABELS = {"slack": "slack (post + update)", "slack-streams": "slack (native streams)"}


def _stream_rows(table: Table, platform: str, result: dict[str, Any]) -> None:
    if "by_post" in result:
        table.add(f"{platform}: first text shown by the turn's first post", f"{result['by_post']} of {result['turns']}")
    if result["turns"] and "turn_writes" in result:
        table.add(f"{platform}: writes per turn (its own messages)", f"{result['turn_writes'] / result['turns']:.1f}")
    if "streams" in result:
        table.add(f"{platform}: turns shown as native streams", f"{result['streams']} of {result['turns']}")


async def run(smoke: bool, platforms: tuple[str, ...] = ("slack", "slack-streams", "discord"),
              modes: tuple[Mode, ...] = ("serve",), *, scaled_stream: bool = True, scale: float | None = None) -> Table:
    n, default_scale = (2, 20.0) if smoke else (20, 4.0)
    scale = scale or default_scale
    # An LLM at about 1 s to first token and 50 tokens/s, 100-word turns, run `scale`× faster.
    plan = ReplyPlan(latency_s=1.0 / scale, tokens_per_s=50.0 * scale, debater_words=100, judge_words=100)
    table = Table(f"pacing — {n} debates (1 round) at once into one Slack channel / one Discord channel, "
                  f"peers enforcing the limits, time ×{scale:g}")
    stream_scale = None if scaled_stream else 1.0
    with tempfile.TemporaryDirectory(prefix="bench-pacing-") as tmp:
        for mode in modes:
            for platform in platforms:
                if platform == "discord":
                    result = await bench_discord(n, scale, plan, Path(tmp), mode=mode, stream_scale=stream_scale)
                else:
                    result = await bench_slack(n, scale, plan, Path(tmp), streams=platform == "slack-streams",
                                               mode=mode, stream_scale=stream_scale)
                label = f"{LABELS.get(platform, platform)} · {mode}"
                _rows(table, label, result, n, scale)
                _stream_rows(table, label, result)
    table.note(f"first text: a turn's first {PROBE_WORDS} words shown, from when its model had them; floor: every "
               "first text written as soon as its channel's limit allows, in the order the models made them "
               "(Slack: every thread is in one channel, 1 post/s; Discord: each thread 5 writes / 5 s); target: "
               "p99 within one post interval (1 platform s) of the floor's p99")
    table.note("serve: the text travels the workflow's DBOS stream (its first write a phrase, then batched every "
               f"{stream_interval():g} s{' ÷ scale' if scaled_stream else ' real'}), read by the front; "
               "engine: the same front fed by the engine in this process (text every 50 ms), no DBOS")
    table.note("Discord: each debate streams into its own thread (threads are channels: 5 writes / 5 s each); "
               "the 20 root-message status edits share the parent channel")
    if "slack-streams" in platforms:
        table.note("Slack native streams: a turn streams when the workspace's Tier 2 budget (chat.startStream + "
                   "chat.stopStream, 20 a minute) has a start and a stop free at once, else it is posted and updated")
    return table


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.pacing")
    parser.add_argument("--only", action="append", choices=("slack", "slack-streams", "discord"))
    parser.add_argument("--mode", action="append", choices=MODES,
                        help="serve: through the workflow's stream (default); engine: the engine in this process")
    parser.add_argument("--unscaled-stream", action="store_true",
                        help="keep the stream's batching and polling in real seconds (×SCALE in platform seconds)")
    parser.add_argument("--scale", type=float, help="time runs this much faster than the platforms' (default 4)")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    print(asyncio.run(run(args.smoke, tuple(args.only or ("slack", "slack-streams", "discord")),
                          tuple(args.mode or ("serve",)), scaled_stream=not args.unscaled_stream,
                          scale=args.scale)).render())
