"""5. Recall: `Store.search` p50 / p99 over a generated log of 100k turns; write cost of `add_turn` per turn.

The log is generated in one bulk-insert transaction on its own connection to the store's file, after
the store created the schema (debates, seats, turns and verdicts, the FTS triggers doing their work as
in production). Turn text is drawn from a Zipf-shaped
vocabulary (a few hundred common words, a long tail of rare ones), so the query mix can hit rare,
mid-frequency and common words the way users do. Searches and writes go through the store's one
writer thread, awaited from the event loop, exactly as the bots call them.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, ClassVar

from sqlite_utils import Database

from bench.common import Table, median, percentile
from bench.llm_peer import VOCABULARY
from orchestrator.log import SearchHit, Store
from orchestrator.log.records import to_iso
from orchestrator.models import Turn

NAME = "recall"
TARGET_P99_MS = 20.0
TURNS_PER_DEBATE = 6
SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "den", "bar", "qui", "zel", "por", "tin", "gra", "fen")


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words = list(dict.fromkeys(VOCABULARY))
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in words:
            words.append(word)
    return words


class Prose:
    """Text drawn word by word from a Zipf distribution (s = 1) over the vocabulary."""

    def __init__(self, rng: random.Random, vocabulary: list[str]) -> None:
        self.rng = rng
        self.vocabulary = vocabulary
        self.cum_weights = list(accumulate(1 / (rank + 1) for rank in range(len(vocabulary))))

    def text(self, words: int) -> str:
        picked = self.rng.choices(self.vocabulary, cum_weights=self.cum_weights, k=words)
        for at in range(0, words, 14):  # sentences, so snippets read like text
            picked[at] = picked[at].capitalize()
        return " ".join(picked) + "."


@dataclass
class GeneratedLog:
    """A generated log's rows, backend-neutral: times are epoch seconds, flags booleans."""

    debates: list[dict[str, Any]] = field(default_factory=list)
    seats: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)

    TIMES: ClassVar[frozenset[str]] = frozenset({"created_at", "finished_at", "started_at", "at"})


def generate(prose: Prose, turns: int, words_per_turn: int) -> GeneratedLog:
    """`turns` turns in debates of TURNS_PER_DEBATE, with seats and verdicts (the same rows for a seed)."""
    debates = turns // TURNS_PER_DEBATE
    base = time.time() - 86400 * 365
    out = GeneratedLog()
    for d in range(debates):
        debate_id = f"g{d:09d}"
        created = base + d * 600
        out.debates.append({
            "id": debate_id, "topic": prose.text(12), "format": "challenge", "status": "completed",
            "created_at": created, "finished_at": created, "platform": "slack", "channel": "C1",
            "rounds_planned": 3, "rounds_completed": 3, "input_tokens": 0, "output_tokens": 0, "warnings": "[]",
        })
        for position, (label, role) in enumerate((("A", "proposer"), ("B", "challenger"))):
            out.seats.append({"debate_id": debate_id, "label": label, "role": role, "provider": "openai",
                              "model": "openai:gpt-5", "position": position})
        for t in range(TURNS_PER_DEBATE):
            out.turns.append({
                "debate_id": debate_id, "round": t // 2 + 1, "seat": "AB"[t % 2],
                "role": ("proposer", "challenger")[t % 2], "kind": "defense", "model": "openai:gpt-5",
                "text": prose.text(words_per_turn), "started_at": created, "duration_ms": 1000,
                "input_tokens": 900, "output_tokens": 600, "status": "ok",
            })
        out.verdicts.append({"debate_id": debate_id, "winner": "A", "split": False,
                             "reasoning": prose.text(50),
                             "recommendation": prose.text(20), "json": "{}", "at": created})
    return out


def _sqlite_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: to_iso(v) if k in GeneratedLog.TIMES else int(v) if isinstance(v, bool) else v for k, v in row.items()}


def load_sqlite(db: Database, generated: GeneratedLog) -> None:
    """Insert the generated rows (the caller holds the one transaction)."""
    for table in ("debates", "seats", "turns", "verdicts"):
        rows = (_sqlite_row(r) for r in getattr(generated, table))
        db[table].insert_all(rows, batch_size=2000)  # type: ignore[union-attr]


def _checkpoint(db: Database) -> None:
    """Checkpoint the bulk load out of the WAL, so the write figures do not pay for it."""
    if db.conn.in_transaction:
        db.conn.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _queries(rng: random.Random, vocabulary: list[str], per_class: int) -> dict[str, list[str]]:
    """Query words by Zipf rank: rare (the tail), mid-frequency, common (the top 20), and two-word queries."""
    common = vocabulary[:20]
    mid = vocabulary[100:600]
    rare = vocabulary[3000:]
    return {
        "rare word": [rng.choice(rare) for _ in range(per_class)],
        "mid word": [rng.choice(mid) for _ in range(per_class)],
        "common word": [rng.choice(common) for _ in range(per_class)],
        "two words": [f"{rng.choice(mid)} {rng.choice(mid)}" for _ in range(per_class)],
    }


@dataclass
class Searched:
    """Search timings per query class (ms), hits per query, and each query's debate ids in rank order."""

    ms: dict[str, list[float]] = field(default_factory=dict)
    hits: list[int] = field(default_factory=list)
    ids: dict[str, list[str]] = field(default_factory=dict)

    @property
    def everything(self) -> list[float]:
        return [t for ts in self.ms.values() for t in ts]


async def time_searches(search: Callable[[str, int], Awaitable[list[SearchHit]]],
                        queries: dict[str, list[str]], limit: int = 20) -> Searched:
    """Each query once, in order, awaited as the bots await it; after one warm-up search."""
    await search("warm up the page cache", limit)
    out = Searched()
    for kind, texts in queries.items():
        for text in texts:
            began = time.perf_counter()
            found = await search(text, limit)
            out.ms.setdefault(kind, []).append((time.perf_counter() - began) * 1000)
            out.hits.append(len(found))
            out.ids[f"{kind}: {text}"] = [hit.debate_id for hit in found]
    return out


async def time_writes(add_turn: Callable[[Turn], Awaitable[int]], turn: Turn, writes: int) -> list[float]:
    """`writes` sequential `add_turn`s of the same turn (idempotent: the first inserts, the rest find it), µs each."""
    out: list[float] = []
    for _ in range(writes):
        began = time.perf_counter()
        await add_turn(turn)
        out.append((time.perf_counter() - began) * 1e6)
    return out


def sizes(smoke: bool) -> tuple[int, int, int, int]:
    """(turns, queries per class, sequential writes, words per turn)."""
    return (1_000, 5, 50, 150) if smoke else (100_000, 40, 2_000, 150)


def write_turn(prose: Prose, words_per_turn: int) -> Turn:
    return Turn(debate_id="g000000000", round=9, seat="A", role="proposer", kind="defense", model="openai:gpt-5",
                text=prose.text(words_per_turn), input_tokens=900, output_tokens=600)


async def build_sqlite(path: Path, generated: GeneratedLog) -> float:
    """The store's schema, then the generated rows in one transaction, checkpointed; seconds taken."""
    async with Store(path):  # the schema, as the bots create it
        pass
    loader = Database(path)
    began = time.perf_counter()
    with loader.conn:  # one transaction
        load_sqlite(loader, generated)
    took = time.perf_counter() - began
    _checkpoint(loader)
    loader.close()
    return took


async def run(smoke: bool) -> Table:
    turns, per_class, writes, words_per_turn = sizes(smoke)
    rng = random.Random(20240607)
    vocabulary = _vocabulary(rng, 6000)
    prose = Prose(rng, vocabulary)
    table = Table(f"recall — Store.search over {turns:,} turns (~{words_per_turn} words each, Zipf vocabulary of "
                  f"{len(vocabulary):,} words), through the writer thread")
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        path = Path(tmp) / "recall.db"
        began = time.perf_counter()
        generated = generate(prose, turns, words_per_turn)
        generated_s = time.perf_counter() - began
        generated_s += await build_sqlite(path, generated)
        async with Store(path) as store:
            size_mb = path.stat().st_size / 1e6
            queries = _queries(rng, vocabulary, per_class)
            searched = await time_searches(store.search, queries)
            write_us = await time_writes(store.add_turn, write_turn(prose, words_per_turn), writes)
    everything = searched.everything
    table.add("log generated (one bulk write)", f"{generated_s:.1f} s, {size_mb:.0f} MB")
    table.add(f"search p50 ({len(everything)} queries, {median(searched.hits):.0f} hits median)",
              f"{percentile(everything, 50):.1f} ms")
    table.check("search p99", percentile(everything, 99), ".1f", TARGET_P99_MS, " ms")
    for kind, ts in searched.ms.items():
        table.add(f"  {kind}: p50 / p99", f"{percentile(ts, 50):.1f} / {percentile(ts, 99):.1f} ms")
    table.add(f"add_turn through the writer thread ({writes:,} sequential): p50 / mean",
              f"{percentile(write_us, 50):.0f} / {sum(write_us) / writes:.0f} µs/turn")
    return table


if __name__ == "__main__":
    print(asyncio.run(run(False)).render())
