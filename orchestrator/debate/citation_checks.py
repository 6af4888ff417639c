"""A debate's citation checks: each citing turn's checked as a step started beside the next turn, and all
of them settled before anyone reads them (a judge, a council's ballots and chair).

The step's id is drawn when it is started (`Steps.start`), so a resumed debate gets each turn's recorded
checks back and reads no source twice. One `EvidenceChecker` per debate (orchestrator/evidence/) keeps the
pages read; its checks are scrubbed like every event before they are kept or shown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from orchestrator.brief.fetch import Fetcher, FetchPolicy
from orchestrator.config import Settings
from orchestrator.debate.steps import Steps
from orchestrator.events import EvidenceChecked
from orchestrator.evidence import EvidenceChecker, citations
from orchestrator.models import DebateSpec, EvidenceCheck, Turn

log = logging.getLogger(__name__)


@dataclass
class CitationChecks:
    """Every check of one debate: `done` in the order the turns were taken, `running` still out."""

    done: list[EvidenceCheck] = field(default_factory=list)
    running: list[asyncio.Task[list[EvidenceCheck]]] = field(default_factory=list)
    checker: EvidenceChecker | None = None  # made on the first citation: the brief, the fetcher, pages read

    def start(self, spec: DebateSpec, settings: Settings, steps: Steps, turn: Turn,
              scrub: Callable[[EvidenceCheck], EvidenceCheck],
              deliver: Callable[[EvidenceChecked], Awaitable[object]]) -> None:
        """Check `turn`'s citations as a step beside what the debate does next; `deliver` shows the line they
        make under the turn. A turn that cites nothing takes no step."""
        if not citations(turn.text):
            return
        if self.checker is None:
            self.checker = EvidenceChecker(spec.brief, Fetcher(FetchPolicy.from_settings(settings)))
        checker = self.checker

        async def check_citations() -> list[EvidenceCheck]:  # the checks, and the line under the turn they make
            checks = [scrub(c) for c in await checker.check_text(turn.seat, turn.round, turn.text)]
            await deliver(EvidenceChecked(debate_id=spec.id, round=turn.round, seat=turn.seat, kind=turn.kind,
                                          checks=tuple(checks)))
            return checks

        self.running.append(steps.start(check_citations))

    async def settled(self, debate_id: str) -> list[EvidenceCheck]:
        """Every check started so far, once it has ended. A check that broke tells nothing: its citations
        count as none (logged)."""
        while self.running:
            started, self.running = self.running, []
            for checks in await asyncio.gather(*started, return_exceptions=True):
                if isinstance(checks, Exception):
                    log.warning("evidence check failed in debate %s", debate_id, exc_info=checks)
                elif isinstance(checks, BaseException):
                    raise checks
                else:
                    self.done.extend(checks)
        return self.done

    def abandon(self) -> None:
        """The debate ended without waiting for its checks (a stop, a failure): they end with it."""
        for task in self.running:
            task.cancel()
        self.running = []
