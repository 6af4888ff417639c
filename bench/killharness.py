"""Kill -9 harness (issue 11): debates started from chat survive SIGKILL of the process running them.

Each trial runs the product as an operator does, against the loopback peers (Slack Web API, Discord REST +
gateway, the scripted LLM server of bench.killscript, all in this process): `debate serve` (Slack HTTP mode
and Discord), or `debate serve --front-only` with `debate worker --name w1` (mode "split", killing the front
and the worker in turn), or on Postgres (mode "postgres": two fronts, `debate serve --front-only`, both
serving Slack HTTP mode and the first also Discord, and two workers `debate worker --name w1|w2
--concurrency 2`, all with DEBATE_DATABASE_URL of one database of a real PostgreSQL server, bench.pg;
each Slack command goes to one front at random, the Discord interactions to the one gateway; the victim is a
random worker, restarted under its name). It starts three debates, one per format, by signed Slack slash
commands and Discord interactions (platforms alternate by trial), waits until all three are logged, kills the
victim with SIGKILL after a random delay, restarts it, and waits for every debate to end and its thread to settle. Then
bench.killcheck counts, per debate: completed, turns lost (from the log or the thread), duplicates (log rows,
platform messages), and `PRAGMA integrity_check` of every SQLite file the product wrote (on Postgres: that
each debate's workflow ended SUCCESS in DBOS's tables, and that no SQLite file was written at all).

Also measured: kill → the killed process answering again (health and a new Discord IDENTIFY), kill → the first
model call of a debate that was mid-run at the kill, kill → the first platform write for such a debate, and how
many model calls that had already completed before the kill were made again afterwards (a durable resume
re-runs only the call in flight). Trials run a few at a time (`LANES`), each with its own peers and workdir.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import Table, median
from bench.killcheck import DebateCheck, check_debate, check_workflow, summarize
from bench.killscript import CON_MODEL, JUDGE_MODEL, PRO_MODEL, KillScript, marker, tag_of, topic
from bench.pg import BenchPostgres, PostgresUnavailable, exit_cleanly_on_sigterm
from bench.served import LogSource, Peers, Proc, ProcessExited, free_port, integrity, read_log
from orchestrator.durable.names import workflow_id
from tests.fakes.llm_server import FakeLLMServer, RequestRecord

NAME = "killharness"
FORMATS = ("challenge", "consensus", "stances")
LANES = 5
PG_LANES = 2  # Postgres trials at once (each: its own server, two fronts, two workers)
PG_WORKER_CONCURRENCY = 2  # debates at once per worker: a trial's three debates spread over both workers
CONTROLS = 2
KILL_WINDOW_S = (0.1, 4.5)  # after all three debates are logged; a debate takes about 4–6 s in the log
KILL_WINDOW_SMOKE_S = (0.5, 1.5)  # smoke: early, so the kill finds its debates mid-run
FINISH_WITHIN_S = 60.0  # after the restart, for every debate to end and its thread to settle
SETTLED_CALL_S = 1.0  # a model call that finished this long before the kill must not run again
QUIET_S = 2.5  # no platform call for this long (a verdict may wait 2 s for the debate's end): settled
BIND_ATTEMPTS = 3  # a product process that could not bind its port is started again on a fresh one

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Trial:
    number: int
    mode: str  # "serve" | "split" | "postgres"
    victim: str  # "serve" | "front" | "worker" | "w1" | "w2" (postgres), or "none" for a control (nothing killed)
    kill_after_s: float
    rounds: int  # challenge's rounds (1 or 2)


@dataclass
class TrialResult:
    trial: Trial
    checks: list[DebateCheck] = field(default_factory=list)
    in_flight: int = 0  # debates still running in the log at the kill
    ready_s: float | None = None  # kill → the restarted process answers
    resume_call_s: list[float] = field(default_factory=list)
    resume_write_s: list[float] = field(default_factory=list)
    repeated_calls: int = 0  # model calls that had finished ≥ SETTLED_CALL_S before the kill, made again
    repeated_late_calls: int = 0  # the same for calls that finished in the last SETTLED_CALL_S before it
    integrity: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    unavailable: bool = False  # the product does not have this mode (e.g. --front-only unknown)
    sqlite_files: list[str] = field(default_factory=list)  # postgres: SQLite files that appeared (none expected)
    fronts_used: Counter[str] = field(default_factory=Counter)  # postgres: Slack commands per front
    repeated_detail: list[str] = field(default_factory=list)  # what each repeated call was


def plan(smoke: bool, seed: int = 11, counts: tuple[int, int] | None = None,
         postgres: int | None = None) -> list[Trial]:
    """Two no-kill controls, then `single` trials of `debate serve` and `split` of front + worker
    (killing the front and the worker in turn); `counts` overrides (single, split). Then, on Postgres,
    one control and `postgres` trials killing a random worker (w1 or w2). Smoke: one kill of `debate
    serve`, which runs the debates and renders them, so both checks bite (nothing lost: the debates resume;
    nothing posted twice: the threads resume), and no controls. Each product process costs ~7 CPU-s to
    start (its imports), so a kill of a front apart from its worker (three more) and the Postgres trial
    (five) are left to the full run (`python -m bench.killharness --single 1 --split 1 --postgres 1` runs all three)."""
    rng = random.Random(seed)
    window = KILL_WINDOW_SMOKE_S if smoke else KILL_WINDOW_S
    single, split = counts or ((1, 0) if smoke else (51, 18))
    if postgres is None:
        postgres = 0 if smoke else 32
    controls = 0 if smoke else CONTROLS
    # two controls (platforms alternate by trial, so every format is checked on both): a clean run must pass
    trials = [Trial(n, "serve", "none", 0.0, 2) for n in range(controls)] if single or split else []
    first = len(trials)
    for n in range(first, first + single + split):
        mode = "serve" if n < first + single else "split"
        victim = "serve" if mode == "serve" else ("front", "worker")[(n - first - single) % 2]
        trials.append(Trial(n, mode, victim, rng.uniform(*window), rng.choice((1, 2))))
    if postgres:
        first = len(trials)
        if controls:
            trials.append(Trial(first, "postgres", "none", 0.0, 2))
        for n in range(first + int(controls > 0), first + int(controls > 0) + postgres):
            trials.append(Trial(n, "postgres", rng.choice(("w1", "w2")), rng.uniform(*window),
                                rng.choice((1, 2))))
    return trials


async def launch(proc: Proc, peers: Peers, *, identifies_before: int | None = None) -> None:
    """Start `proc` and wait until it is ready. Its port was free when it was picked, but another lane's
    process may have bound it since (a restart binds the same port again, after a gap): a process that
    exits because it cannot listen is started again on a fresh port, up to BIND_ATTEMPTS times."""
    for attempt in range(BIND_ATTEMPTS):
        await proc.start()
        try:
            await proc.ready(peers, identifies_before=identifies_before)
            return
        except ProcessExited as exc:
            if "cannot listen" not in str(exc) or proc.port is None or attempt == BIND_ATTEMPTS - 1:
                raise
            _move_port(proc, free_port())


def _move_port(proc: Proc, port: int) -> None:
    at = proc.args.index("--port")
    proc.args[at + 1] = str(port)
    proc.port = port


def _platform(trial: Trial, index: int) -> str:
    return "slack" if (trial.number + index) % 2 == 0 else "discord"


def _tag(trial: Trial, index: int) -> int:
    return trial.number * len(FORMATS) + index


async def _start_debates(trial: Trial, peers: Peers, ports: int | dict[str, int],
                         used: Counter[str] | None = None) -> None:
    """Start the trial's debates; with several fronts (`ports` by name), each Slack command goes to one
    at random (counted in `used`)."""
    rng = random.Random(trial.number)
    fronts = ports if isinstance(ports, dict) else {"front": ports}
    for index, fmt in enumerate(FORMATS):
        tag = _tag(trial, index)
        if _platform(trial, index) == "slack":
            name = rng.choice(sorted(fronts))
            if used is not None:
                used[name] += 1
            status, _ = await peers.slack_command(fronts[name], f"{topic(tag)} --format {fmt} --rounds {trial.rounds}",
                                                  channel=f"C{tag:04d}", user=f"U{tag:04d}")
            if status != 200:
                raise RuntimeError(f"/slack/events answered {status} to a /debate command")
        else:
            await peers.discord_command({"topic": topic(tag), "format": fmt, "rounds": trial.rounds},
                                        user_id=f"7400000000{tag:08d}")


async def _until(predicate, within: float, step: float = 0.1) -> bool:  # type: ignore[no-untyped-def]
    """`predicate` (a read of the log) on a thread: this loop runs the LLM and chat peers, and a read-only
    connection to a log whose writer was just killed can wait out its busy timeout there."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await asyncio.to_thread(predicate):
            return True
        await asyncio.sleep(step)
    return bool(await asyncio.to_thread(predicate))


def _statuses(db: LogSource, tags: Sequence[int]) -> dict[int, str]:
    rows = read_log(db, "select topic, status from debates")
    return {t: r["status"] for r in rows if (t := tag_of(r["topic"])) is not None and t in tags}


def _keep_evidence(workdir: Path, peers: Peers, db: LogSource, check: DebateCheck) -> None:
    """What a debate whose check found a problem left behind, for `--keep`: its rows of the log's messages
    table, and every platform message and call of its trial's peers (in memory, gone with the trial)."""
    rows = read_log(db, "select key, message_id, final from messages where debate_id = ?", (check.debate_id,))
    found = {"problems": check.problems, "debate_id": check.debate_id, "platform": check.platform,
             "logged_messages": [dict(r) for r in rows],
             "discord_messages": list(peers.discord.messages.values()),
             "discord_calls": [{"at": c.at, "method": c.method, "path": getattr(c, "path", "")}
                               for c in peers.discord.calls]}
    (workdir / f"problem-{check.tag:04d}.json").write_text(json.dumps(found, default=str, indent=1))


def _rendered(db: LogSource, tags: Sequence[int]) -> bool:
    """Every debate has ended in the log, and each completed one has its verdict message posted in its final
    form (not only its post's intent: a verdict waits for the channel's rate limit like any post, and that
    wait can outlast the settling's quiet period)."""
    statuses = _statuses(db, tags)
    if len(statuses) < len(tags) or any(s == "running" for s in statuses.values()):
        return False
    verdicts = read_log(db, "select d.topic from messages m join debates d on d.id = m.debate_id "
                            "where m.key = 'verdict' and m.message_id != '' and m.final")
    done = {tag_of(r["topic"]) for r in verdicts}
    return all(t in done for t, s in statuses.items() if s == "completed")


async def _settle(peers: Peers, within: float) -> None:
    """Until neither platform peer has seen a call for QUIET_S (or `within` has passed)."""
    deadline = time.monotonic() + within
    seen = -1
    while time.monotonic() < deadline:
        count = len(peers.slack.calls) + len(peers.discord.calls)
        if count == seen:
            return
        seen = count
        await asyncio.sleep(QUIET_S)


def _alive(procs: Iterable[Proc]) -> None:
    """Raise ProcessExited for a process that died on its own (a worker that failed after its first
    half second looked ready; the trial must not count debates that never had a worker)."""
    for proc in procs:
        proc.check_alive()


def _debate_ids(db: LogSource, tag: int) -> set[str]:
    """The platform ids a debate's writes name: its thread, its channel and every message it recorded."""
    rows = read_log(db, "select id, channel, thread from debates where topic like ?", (f"kill debate {tag:04d}:%",))
    ids = {str(v) for r in rows for v in (r["channel"], r["thread"]) if v}
    for r in rows:
        ids |= {m["message_id"] for m in read_log(db, "select message_id from messages where debate_id = ?",
                                                  (r["id"],))}
    return ids


def _first_write_after(peers: Peers, ids: set[str], after: float) -> float | None:
    times = [c.at for c in peers.slack.calls if c.at > after and c.method.startswith("chat.")
             and (str(c.params.get("channel")) in ids or str(c.params.get("ts")) in ids)]
    times += [c.at for c in peers.discord.calls if c.at > after and c.method in ("POST", "PATCH")
              and any(part in ids for part in c.path.split("/"))]
    return min(times) if times else None


def _call_kind(record: RequestRecord) -> str:
    system = record.messages[0]["content"] if record.messages else ""
    if "impartial judge" in system:
        return "judge pass"
    if "condense debate transcripts" in system:
        return "round summary"
    return f"{record.model} call"


def _last_record_before(url: str, tag: int, killed_epoch: float) -> str:
    """Postgres: how long before the kill the debate's workflow last recorded a step (DBOS's own clock)."""
    rows = read_log(url, "select max(o.completed_at_epoch_ms) as last from dbos.operation_outputs o"
                         " join dbos.workflow_status w on w.workflow_uuid = o.workflow_uuid"
                         " where w.inputs like ? and o.completed_at_epoch_ms < ?",
                    (f"%kill debate {tag:04d}:%", int(killed_epoch * 1000)))
    last = rows[0]["last"] if rows else None
    if last is None:
        return ""
    return f"; its debate's last step recorded {killed_epoch - last / 1000:.1f} s before the kill"


def _repeats(requests: Sequence[RequestRecord], killed_at: float, respawned_at: float,
             result: TrialResult, url: str | None = None, killed_epoch: float = 0.0) -> None:
    """Count the model calls made again after the restart: those that had finished at the peer
    ≥ SETTLED_CALL_S before the kill (their step was surely recorded: a miss), and those that finished
    just before it (the process may have died before recording the answer: allowed)."""
    finished: dict[str, float] = {}
    for r in requests:
        if r.status == 200 and r.finished_at is not None and r.finished_at < killed_at:
            finished[marker(r)] = max(finished.get(marker(r), 0.0), r.finished_at)
    for r in requests:
        if r.started_at <= respawned_at or marker(r) not in finished:
            continue
        before = killed_at - finished[marker(r)]
        if before >= SETTLED_CALL_S:
            result.repeated_calls += 1
            tag = tag_of(r.prompt_text) or 0
            where = FORMATS[tag - _tag(result.trial, 0)] if 0 <= tag - _tag(result.trial, 0) < len(FORMATS) else "?"
            detail = f"{where} {_call_kind(r)} that ended {before:.1f} s before the kill"
            if url is not None:
                with contextlib.suppress(Exception):
                    detail += _last_record_before(url, tag, killed_epoch)
            result.repeated_detail.append(detail)
        else:
            result.repeated_late_calls += 1


async def run_trial(trial: Trial, script: KillScript, root: Path, unavailable: dict[str, str], *,
                    graceful: bool = True) -> TrialResult:
    """`graceful`: the processes get SIGTERM once the checks are done, else SIGKILL (smoke: see Proc.stop)."""
    result = TrialResult(trial)
    if trial.mode in unavailable:
        result.unavailable, result.error = True, unavailable[trial.mode]
        return result
    workdir = root / f"trial-{trial.number:03d}"
    workdir.mkdir()
    db = workdir / "debates.db"
    tags = [_tag(trial, i) for i in range(len(FORMATS))]
    async with Peers(FakeLLMServer()) as peers:
        assert peers.llm is not None
        script.install(peers.llm)
        env = peers.env(workdir, DEBATE_PROPOSER=PRO_MODEL, DEBATE_CHALLENGER=CON_MODEL, DEBATE_JUDGE=JUDGE_MODEL)
        if trial.mode == "serve":
            procs = {"serve": Proc.serve(workdir, env)}
        else:
            procs = {"front": Proc.serve(workdir, env, front_only=True, name="front"),
                     "worker": Proc.worker(workdir, env, worker_name="w1")}
        front = procs.get("serve") or procs["front"]
        try:
            for proc in procs.values():  # one after the other: the front first, then the worker
                await launch(proc, peers, identifies_before=0 if proc is front else None)
            assert front.port is not None
            await _start_debates(trial, peers, front.port)
            if not await _until(lambda: len(_statuses(db, tags)) == len(tags), 30):
                raise RuntimeError(f"only {len(_statuses(db, tags))} of {len(tags)} debates were logged")
            await asyncio.sleep(trial.kill_after_s)
            _alive(procs.values())

            in_flight_tags = [t for t, s in _statuses(db, tags).items() if s == "running"]
            result.in_flight = len(in_flight_tags)
            killed_at = respawned_at = time.monotonic()
            if trial.victim != "none":
                victim = procs[trial.victim]
                identifies = peers.discord.identifies
                victim.kill()
                killed_at = time.monotonic()
                await victim.wait()
                respawned_at = time.monotonic()  # a call the peers see after this is the new process's
                await launch(victim, peers, identifies_before=identifies if victim is front else None)
                result.ready_s = time.monotonic() - killed_at

            await _until(lambda: _rendered(db, tags), FINISH_WITHIN_S, step=0.2)
            await _settle(peers, FINISH_WITHIN_S)
            _alive(procs.values())

            # started_at is perf_counter, CLOCK_MONOTONIC on Linux like time.monotonic()
            after = [r for r in peers.llm.requests if r.started_at > respawned_at]
            if trial.victim != "none":
                _repeats(peers.llm.requests, killed_at, respawned_at, result)
            for tag in in_flight_tags if trial.victim != "none" else []:
                calls = [r.started_at for r in after if tag_of(r.prompt_text) == tag]
                if calls and trial.victim != "front":  # the worker calls models on while a front is down
                    result.resume_call_s.append(min(calls) - killed_at)
                write = _first_write_after(peers, _debate_ids(db, tag), respawned_at)
                if write is not None and trial.victim != "worker":  # the front renders on while a worker is down
                    result.resume_write_s.append(write - killed_at)
            for index, fmt in enumerate(FORMATS):
                tag = tags[index]
                check = check_debate(peers, db, tag, _platform(trial, index), fmt, trial.rounds, f"C{tag:04d}")
                result.checks.append(check)
                if check.problems:
                    _keep_evidence(workdir, peers, db, check)
        except ProcessExited as exc:
            result.error = str(exc)
            if exc.code == 2 and trial.mode != "serve":
                unavailable[trial.mode] = str(exc)
                result.unavailable = True
        except Exception as exc:  # one broken trial is reported, the others still run
            log.debug("trial %d failed", trial.number, exc_info=True)
            result.error = f"{type(exc).__name__}: {exc}"
        finally:
            await asyncio.gather(*(p.stop(20, graceful=graceful) for p in procs.values()))
    for path in sorted(workdir.iterdir()):
        if path.suffix in (".db", ".sqlite") and path.stat().st_size > 0:
            with contextlib.suppress(Exception):
                result.integrity[path.name] = integrity(path)
    return result


class ServerPool:
    """Postgres servers for the trials, one per lane (a trial's four processes take up to ~90 of a server's
    200 connections): a trial borrows one and gets a fresh database on it."""

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes
        self._all: list[BenchPostgres] = []
        self._free: asyncio.Queue[BenchPostgres] = asyncio.Queue()
        self._starting = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def database(self, keep: bool) -> AsyncIterator[str]:
        async with self._starting:
            if self._free.empty() and len(self._all) < self.lanes:
                server = await asyncio.to_thread(BenchPostgres.start)
                self._all.append(server)
                self._free.put_nowait(server)
        server = await self._free.get()
        url = await asyncio.to_thread(server.create_database, "kill")
        try:
            yield url
        finally:
            if not keep:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(server.drop_database, url)
            self._free.put_nowait(server)

    async def close(self) -> None:
        for server in self._all:
            await asyncio.to_thread(server.stop)
        self._all.clear()


def _pending_on(url: str, executor: str) -> list[str]:
    """The debate ids whose workflows the executor has pending (dequeued and unfinished)."""
    rows = read_log(url, "select workflow_uuid from dbos.workflow_status where executor_id = ? and status = 'PENDING'",
                    (executor,))
    return [r["workflow_uuid"].removeprefix(workflow_id("")) for r in rows]


def _tags_of(db: LogSource, debate_ids: Iterable[str]) -> list[int]:
    ids = set(debate_ids)
    return [t for r in read_log(db, "select id, topic from debates") if r["id"] in ids
            and (t := tag_of(r["topic"])) is not None]


async def run_postgres_trial(trial: Trial, script: KillScript, root: Path, pool: ServerPool,
                             keep: bool, *, graceful: bool = True) -> TrialResult:
    """Two fronts and two workers on one Postgres database; a random worker killed and restarted."""
    result = TrialResult(trial)
    workdir = root / f"trial-{trial.number:03d}"
    workdir.mkdir()
    tags = [_tag(trial, i) for i in range(len(FORMATS))]
    async with pool.database(keep) as url, Peers(FakeLLMServer()) as peers:
        assert peers.llm is not None
        script.install(peers.llm)
        env = peers.env(workdir, DEBATE_PROPOSER=PRO_MODEL, DEBATE_CHALLENGER=CON_MODEL, DEBATE_JUDGE=JUDGE_MODEL,
                        DEBATE_DATABASE_URL=url)
        slack_only = {k: v for k, v in env.items() if k != "DISCORD_BOT_TOKEN"}  # one Discord gateway: front1's
        front1 = Proc.serve(workdir, env, front_only=True, name="front1", platforms=("slack", "discord"))
        front2 = Proc.serve(workdir, slack_only, front_only=True, name="front2", platforms=("slack",))
        workers = {name: Proc.worker(workdir, env, worker_name=name, concurrency=PG_WORKER_CONCURRENCY, healthz=True)
                   for name in ("w1", "w2")}
        procs = [front1, front2, *workers.values()]
        db: LogSource = url
        try:
            # first alone: it creates the log's tables and DBOS's schema
            await launch(front1, peers, identifies_before=0)
            await asyncio.gather(*(launch(proc, peers) for proc in procs[1:]))
            assert front1.port is not None and front2.port is not None
            await _start_debates(trial, peers, {"front1": front1.port, "front2": front2.port}, result.fronts_used)
            if not await _until(lambda: len(_statuses(db, tags)) == len(tags), 30):
                raise RuntimeError(f"only {len(_statuses(db, tags))} of {len(tags)} debates were logged")
            await asyncio.sleep(trial.kill_after_s)
            _alive(procs)

            killed_at = respawned_at = time.monotonic()
            in_flight_tags: list[int] = []
            killed_epoch = time.time()
            if trial.victim != "none":
                victim = workers[trial.victim]
                in_flight_tags = _tags_of(db, _pending_on(url, f"worker-{trial.victim}"))
                victim.kill()
                killed_at, killed_epoch = time.monotonic(), time.time()
                await victim.wait()
                respawned_at = time.monotonic()
                await launch(victim, peers)
                result.ready_s = time.monotonic() - killed_at
            result.in_flight = len(in_flight_tags)

            await _until(lambda: _rendered(db, tags), FINISH_WITHIN_S, step=0.2)
            await _settle(peers, FINISH_WITHIN_S)
            _alive(procs)

            after = [r for r in peers.llm.requests if r.started_at > respawned_at]
            if trial.victim != "none":
                _repeats(peers.llm.requests, killed_at, respawned_at, result, url, killed_epoch)
            for tag in in_flight_tags:
                calls = [r.started_at for r in after if tag_of(r.prompt_text) == tag]
                if calls:
                    result.resume_call_s.append(min(calls) - killed_at)
            for index, fmt in enumerate(FORMATS):
                check = check_debate(peers, db, tags[index], _platform(trial, index), fmt, trial.rounds,
                                     f"C{tags[index]:04d}")
                check_workflow(db, check)
                result.checks.append(check)
        except Exception as exc:  # one broken trial is reported, the others still run
            log.debug("trial %d failed", trial.number, exc_info=True)
            result.error = f"{type(exc).__name__}: {exc}"
        finally:
            await asyncio.gather(*(p.stop(20, graceful=graceful) for p in procs))
    result.sqlite_files = sorted(p.name for p in workdir.iterdir() if p.suffix in (".db", ".sqlite"))
    return result


def _p50_max(values: list[float]) -> str:
    if not values:
        return "none"
    return f"{median(values):.2f} / {max(values):.2f} s (n={len(values)})"


def _report(table: Table, label: str, results: list[TrialResult], *, killed: bool = True) -> None:
    if not results:
        return
    ran = [r for r in results if r.error is None]
    checks = [c for r in ran for c in r.checks]
    totals = summarize(checks)
    table.add(f"{label}: trials run (of {len(results)})", f"{len(ran)}", f"{len(results)}",
              "pass" if len(ran) == len(results) else "miss")
    if not ran:
        return
    if killed:
        where = "on the killed worker " if ran[0].trial.mode == "postgres" else ""
        table.add(f"{label}: debates mid-run {where}at the kill", f"{sum(r.in_flight for r in ran)} of {len(checks)}")
    table.add(f"{label}: debates completed", f"{totals['completed']}/{totals['debates']}", f"{totals['debates']}",
              "pass" if totals["completed"] == totals["debates"] else "miss")
    table.add(f"{label}: debates with every check clean", f"{totals['clean']}/{totals['debates']}",
              f"{totals['debates']}", "pass" if totals["clean"] == totals["debates"] else "miss")
    table.add(f"{label}: duplicated turns / messages", f"{totals['duplicates']}", "0",
              "pass" if totals["duplicates"] == 0 else "miss")
    table.add(f"{label}: lost turns (log or thread)", f"{totals['lost_turns']}", "0",
              "pass" if totals["lost_turns"] == 0 else "miss")
    if ran[0].trial.mode == "postgres":
        success = sum(1 for c in checks if c.workflow == "SUCCESS")
        table.add(f"{label}: workflows ended SUCCESS (DBOS, Postgres)", f"{success}/{len(checks)}", f"{len(checks)}",
                  "pass" if success == len(checks) else "miss")
        files = sorted({f for r in ran for f in r.sqlite_files})
        table.add(f"{label}: SQLite files written (all state in Postgres)", ", ".join(files) or "none", "none",
                  "pass" if not files else "miss")
        fronts: Counter[str] = Counter()
        for r in ran:
            fronts.update(r.fronts_used)
        table.add(f"{label}: Slack commands per front", ", ".join(f"{k} {v}" for k, v in sorted(fronts.items())))
    else:
        files = [(name, state) for r in ran for name, state in r.integrity.items()]
        bad = [f"{n}: {s}" for n, s in files if s != "ok"]
        table.add(f"{label}: integrity_check ok (SQLite files)", f"{len(files) - len(bad)}/{len(files)}",
                  f"{len(files)}", "pass" if not bad and files else "miss")
    if not killed:
        return
    if ran[0].trial.mode == "postgres":
        table.add(f"{label}: workflows recovered after a kill", f"{sum(c.recoveries for c in checks)}")
    table.add(f"{label}: kill → process answering again, p50 / max", _p50_max([r.ready_s for r in ran if r.ready_s]))
    table.add(f"{label}: kill → first model call of a mid-run debate, p50 / max",
              _p50_max([s for r in ran for s in r.resume_call_s]))
    table.add(f"{label}: kill → first thread write of a mid-run debate, p50 / max",
              _p50_max([s for r in ran for s in r.resume_write_s]))
    repeated = sum(r.repeated_calls for r in ran)
    table.add(f"{label}: model calls done ≥ {SETTLED_CALL_S:g} s before the kill, made again", f"{repeated}", "0",
              "pass" if repeated == 0 else "miss")
    table.add(f"{label}:   done < {SETTLED_CALL_S:g} s before the kill, made again (allowed)",
              f"{sum(r.repeated_late_calls for r in ran)}")


def _notes(table: Table, results: list[TrialResult]) -> None:
    unavailable = {r.trial.mode: r.error for r in results if r.unavailable}
    for mode, error in unavailable.items():
        table.note(f"mode {mode} unavailable in this product: {error}")
    errors = [r for r in results if r.error and not r.unavailable]
    for r in errors[:5]:
        table.note(f"trial {r.trial.number} ({r.trial.mode}, kill {r.trial.victim}) did not run: {r.error}")
    for text, count in _problem_counts(results)[:8]:
        table.note(f"{count} × {text}")
    for r in results:
        for detail in r.repeated_detail:
            table.note(f"made again after the kill: trial {r.trial.number} ({r.trial.mode}, kill {r.trial.victim}): "
                       f"{detail}")


def _problem_counts(results: list[TrialResult]) -> list[tuple[str, int]]:
    counter: Counter[str] = Counter()
    for r in results:
        for c in r.checks:
            for problem in c.problems:
                counter[f"{c.fmt} on {c.platform} (kill {r.trial.victim}): {problem}"] += 1
    return counter.most_common()


async def run(smoke: bool, *, keep: bool = False, counts: tuple[int, int] | None = None,
              postgres: int | None = None, pg_lanes: int = PG_LANES) -> Table:
    trials = plan(smoke, counts=counts, postgres=postgres)
    script = KillScript()
    root = Path(tempfile.mkdtemp(prefix="bench-kill-"))
    unavailable: dict[str, str] = {}
    lanes = asyncio.Semaphore(LANES)
    pool = ServerPool(pg_lanes)
    pg_lane = asyncio.Semaphore(pg_lanes)

    async def lane(trial: Trial) -> TrialResult:
        if trial.mode == "postgres":
            async with pg_lane, lanes:
                try:
                    return await run_postgres_trial(trial, script, root, pool, keep, graceful=not smoke)
                except PostgresUnavailable as exc:
                    return TrialResult(trial, error=str(exc), unavailable=True)
        async with lanes:
            return await run_trial(trial, script, root, unavailable, graceful=not smoke)

    try:
        results = await asyncio.gather(*(lane(t) for t in trials))
    finally:
        await pool.close()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    debates = len(trials) * len(FORMATS)
    window = KILL_WINDOW_SMOKE_S if smoke else KILL_WINDOW_S
    table = Table(f"killharness — {len(trials)} trials × {len(FORMATS)} debates ({debates}; challenge 1–2 rounds, "
                  f"consensus, stances; Slack HTTP + Discord), SIGKILL {window[0]:g}–{window[1]:g} s "
                  f"after all are logged, then restart; LLM peer {script.latency_s:g} s + {script.tokens_per_s:g} "
                  f"words/s, {LANES} trials at a time ({pg_lanes} on Postgres)")
    _report(table, "control (no kill)", [r for r in results if r.trial.victim == "none" and r.trial.mode != "postgres"],
            killed=False)
    _report(table, "serve (kill serve)", [r for r in results if r.trial.victim == "serve"])
    for victim in ("front", "worker"):
        _report(table, f"split (kill {victim})", [r for r in results if r.trial.victim == victim])
    postgres_runs = [r for r in results if r.trial.mode == "postgres"]
    if postgres_runs:
        _report(table, "postgres control (no kill)", [r for r in postgres_runs if r.trial.victim == "none"],
                killed=False)
        _report(table, "postgres (kill a worker)", [r for r in postgres_runs if r.trial.victim != "none"])
        table.note("postgres: 2 fronts (`debate serve --front-only`, Slack HTTP on both, each command to one at "
                   "random; Discord's gateway on front1 only: one gateway per bot token, and no sharding), 2 workers "
                   f"(`debate worker --name w1|w2 --concurrency {PG_WORKER_CONCURRENCY}`), one database per trial; "
                   "the victim is w1 or w2 at random, restarted under its name")
    _notes(table, results)
    if keep:
        table.note(f"workdirs kept in {root}")
    return table


if __name__ == "__main__":
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep each trial's workdir (logs, stderr)")
    parser.add_argument("--single", type=int, metavar="N", help="trials of `debate serve` (default 51)")
    parser.add_argument("--split", type=int, metavar="N", help="trials of front + worker apart (default 18)")
    parser.add_argument("--postgres", type=int, metavar="N",
                        help="trials of 2 fronts + 2 workers on Postgres, killing a worker (default 32). When any of "
                             "--single/--split/--postgres is given, the ones not given are 0")
    parser.add_argument("--pg-lanes", type=int, default=PG_LANES, metavar="N",
                        help=f"Postgres trials at once, each with its own server (default {PG_LANES})")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    exit_cleanly_on_sigterm()
    counts, postgres = None, None
    if args.single is not None or args.split is not None or args.postgres is not None:
        # any count given: the modes not named do not run
        counts, postgres = (args.single or 0, args.split or 0), args.postgres or 0
    table = asyncio.run(run(args.smoke, keep=args.keep, counts=counts, postgres=postgres, pg_lanes=args.pg_lanes))
    print(table.render())
    sys.exit(0)
