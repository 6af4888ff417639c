"""What every bench shares: the result table, percentiles, memory and settings for the loopback peers."""

from __future__ import annotations

import math
import os
import platform
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bots.settings import BotSettings as Settings
from orchestrator.models import DebateSpec, Seat

Verdict = Literal["pass", "miss", "info", "n/a"]

PROPOSER = "openai:bench-proposer"
CHALLENGER = "anthropic:bench-challenger"
JUDGE = "openai:bench-judge"


@dataclass
class Table:
    """One bench's output: a title, rows of (figure, value, target, pass/miss), notes under it."""

    title: str
    rows: list[tuple[str, str, str, Verdict]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, figure: str, value: str, target: str = "", verdict: Verdict = "info") -> None:
        self.rows.append((figure, value, target, verdict))

    def check(self, figure: str, value: float, fmt: str, limit: float, unit: str = "", *, prefix: str = "≤") -> None:
        """A row with a numeric target: pass when `value` is at most `limit` (or at least, with prefix ≥)."""
        ok = value <= limit if prefix == "≤" else value >= limit
        self.add(figure, f"{value:{fmt}}{unit}", f"{prefix} {limit:g}{unit}", "pass" if ok else "miss")

    def note(self, text: str) -> None:
        if text not in self.notes:  # the same finding from several rows is said once
            self.notes.append(text)

    @property
    def misses(self) -> int:
        return sum(1 for row in self.rows if row[3] == "miss")

    def render(self) -> str:
        header = ("figure", "value", "target", "result")
        widths = [max(len(header[i]), *(len(r[i]) for r in self.rows)) if self.rows else len(header[i])
                  for i in range(4)]
        line = "  ".join("-" * w for w in widths)

        def fmt(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(w) if i == 0 or i == 3 else c.rjust(w) if i == 1 else c.ljust(w)
                             for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

        out = [f"== {self.title} ==", fmt(header), line, *(fmt(r) for r in self.rows)]
        out += [f"  note: {n}" for n in self.notes]
        return "\n".join(out)


@dataclass
class Grid:
    """A table with several value columns (e.g. one per backend): a header, rows of cells, notes."""

    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: str) -> None:
        self.rows.append(tuple(cells) + ("",) * (len(self.header) - len(cells)))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def render(self) -> str:
        widths = [max(len(self.header[i]), *(len(r[i]) for r in self.rows)) if self.rows else len(self.header[i])
                  for i in range(len(self.header))]

        def fmt(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(w) if i == 0 or i == len(widths) - 1 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

        out = [f"== {self.title} ==", fmt(self.header), "  ".join("-" * w for w in widths)]
        out += [fmt(r) for r in self.rows] + [f"  note: {n}" for n in self.notes]
        return "\n".join(out)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100), nearest-rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def rss_kb() -> int:
    """This process's resident set size from /proc (no psutil)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("VmRSS not found in /proc/self/status")


def machine() -> str:
    return f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def bench_settings(db: Path, openai_url: str, anthropic_url: str, **extra: Any) -> Settings:
    """Settings pointing both SDKs at the loopback LLM peer, no retries, no cap that would queue debates."""
    values: dict[str, Any] = {
        "DEBATE_DB": str(db),
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": openai_url,
        "ANTHROPIC_API_KEY": "sk-ant-bench",
        "ANTHROPIC_BASE_URL": anthropic_url,
        "DEBATE_MAX_RETRIES": 0,
        "DEBATE_MAX_CONCURRENT": 2000,
        # benches start many debates as one user in one channel: chat quotas would refuse most of them
        "DEBATE_MAX_RUNNING_PER_USER": 2000,
        "DEBATE_MAX_RUNNING_PER_CHANNEL": 2000,
        "DEBATE_MAX_STARTS_PER_USER_HOUR": 100000,
    }
    values.update(extra)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def challenge_spec(number: int, rounds: int, *, topic: str | None = None, **extra: Any) -> DebateSpec:
    """A challenge debate whose topic carries a tag (#000042) the LLM peer uses to group its calls."""
    text = topic or "Should the ingest service move from Python to Rust this quarter?"
    return DebateSpec(
        topic=f"Bench debate #{number:06d}: {text}",
        format="challenge",
        rounds=rounds,
        seats=(Seat(label="A", role="proposer", model=PROPOSER), Seat(label="B", role="challenger", model=CHALLENGER)),
        judge=JUDGE,
        **extra,
    )
