"""`debate run --interactive`: the audience is whoever types at the terminal between rounds.

Before each round from the second on, a prompt on stderr asks for notes; each line typed (up to
MAX_INTERJECTIONS_PER_ROUND) becomes one note signed with the OS user's name, and an empty line lets
the debate go on. The notes are stored in the log as waiting and taken from there, like a chat user's,
so the log and the export keep them with their round. End of input (Ctrl-D, or a piped file running
out) means no more notes for the rest of the debate. Lines are read in a daemon thread, so the event
loop keeps streaming meanwhile and a stopped debate never waits for a line that will not come.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import TextIO

from orchestrator.debate.audience import LogAudience
from orchestrator.log import DebateLog, InterjectionRefused
from orchestrator.models import MAX_INTERJECTION_CHARS, MAX_INTERJECTIONS_PER_ROUND, Interjection
from orchestrator.safety import strip_controls

PROMPT = "Audience note for round {round} (empty line to go on):"


class StdinAudience:
    """An `Audience` (orchestrator/debate/audience.py) reading the terminal."""

    def __init__(self, store: DebateLog, author: str, stdin: TextIO | None = None,
                 prompts: TextIO | None = None) -> None:
        self.store = store
        self.log_audience = LogAudience(store)
        self.author = author
        self.stdin = stdin or sys.stdin
        self.prompts = prompts or sys.stderr
        self.closed = False  # the input ended: nothing more is asked

    async def take(self, debate_id: str, round: int) -> list[Interjection]:
        if round >= 2 and not self.closed:  # notes come between rounds: nothing to react to before round 1
            for line in await self._ask(round):
                try:
                    note = self._note(debate_id, line)
                    await self.store.add_interjection(note, max_waiting=MAX_INTERJECTIONS_PER_ROUND)
                except InterjectionRefused as exc:
                    self.prompts.write(f"Note not taken: {exc}\n")
        return await self.log_audience.take(debate_id, round)

    async def _ask(self, round: int) -> list[str]:
        loop = asyncio.get_running_loop()
        lines: asyncio.Future[list[str]] = loop.create_future()

        def read() -> None:
            try:
                got = self._read(round)
            except BaseException as exc:  # handed to the waiting task, not swallowed
                loop.call_soon_threadsafe(_settle, lines, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, lines, got, None)

        threading.Thread(target=read, name="debate-audience", daemon=True).start()
        return await lines

    def _read(self, round: int) -> list[str]:
        self.prompts.write(PROMPT.format(round=round) + "\n")
        self.prompts.flush()
        lines: list[str] = []
        while len(lines) < MAX_INTERJECTIONS_PER_ROUND:
            raw = self.stdin.readline()
            if not raw:
                self.closed = True
                break
            line = strip_controls(raw).strip()
            if not line:
                break
            if len(line) > MAX_INTERJECTION_CHARS:
                self.prompts.write(f"(cut to {MAX_INTERJECTION_CHARS} characters)\n")
                line = line[:MAX_INTERJECTION_CHARS].rstrip()
            lines.append(line)
        return lines

    def _note(self, debate_id: str, text: str) -> Interjection:
        return Interjection(debate_id=debate_id, author=self.author, platform="cli", text=text)


def _settle(future: asyncio.Future[list[str]], value: list[str] | None, exc: BaseException | None) -> None:
    if future.done():  # the debate stopped while the thread was reading
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(value or [])
