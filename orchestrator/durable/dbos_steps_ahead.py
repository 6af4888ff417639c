"""Which step checks a workflow's execution may leave unsent (Postgres, from the loop: dbos_steps_on_loop.py).

Before every step DBOS reads the workflow's status (a cancelled one stops there) and the step's row (a
replay gets its recorded result back). In a debate's first run that read finds the same thing ten times in
a row: running, nothing recorded. A check sent from the loop also reads the highest step id recorded for the
workflow (`StepRecords.check_ahead`); when that is below the step being checked, every later step of this
execution finds no row either, as long as the execution still owns the workflow: from then on only its
owner writes a step row (every record checks the owner, dbos_step_records.py), and what the owner wrote is
its own steps, each at an id it draws once. So a later check of this execution (the same owner token) is
answered "run it" without a statement, while the knowledge is fresh:

- a cancellation clears the owner (DBOS's `cancel_workflows`), so the next record of this execution
  fails (DBOSWorkflowConflictIDError, which DBOS handles as it handles a cancellation seen by a check: the
  execution parks), and so does the next stream write (it checks the owner too);
- a check is left unsent only within FRESH_S of the last time the execution saw the workflow still its
  own and not cancelled (a check sent, a record written). A debate's steps follow one another within
  milliseconds, so a stop is still seen at the next step boundary unless it lands in those milliseconds;
  then the next step starts, and stops at its first stream write (a turn's), or is a model call that
  DBOS's watcher stops within about a second (a judge's), and its record is refused either way.

Saves ~10 of a debate's 11 check statements on Postgres (~0.13 ms of the worker's CPU each, and the
server's). A replay, a recovered execution (a new owner token) or a parallel round that recorded a later
lane first gets every check sent, as DBOS sends them.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

FRESH_S = 0.2  # how long a confirmation that the execution owns a live workflow lets checks go unsent
KEEP = 4096  # workflows remembered (the oldest forgotten first: its next check is sent)


@dataclass
class _Clear:
    owner: str  # the execution's owner token
    clear_from: int  # no other execution recorded a step at this id or later
    confirmed_at: float  # monotonic: when the workflow was last seen live and this execution's


class StepsAhead:
    """What the checks and records sent so far say about the steps ahead of each workflow's execution."""

    def __init__(self) -> None:
        self._known: OrderedDict[str, _Clear] = OrderedDict()
        self.unsent = 0  # checks answered without a statement

    def clear(self, workflow_id: str, owner: str | None, function_id: int) -> bool:
        """True when step `function_id` of this execution (`owner`) surely has no row and the workflow was
        seen live and this execution's within FRESH_S: the check need not be sent."""
        known = self._known.get(workflow_id)
        if (known is None or owner is None or known.owner != owner or function_id < known.clear_from
                or time.monotonic() - known.confirmed_at > FRESH_S):
            return False
        self.unsent += 1
        return True

    def checked(self, workflow_id: str, owner: str | None, function_id: int, *, run: bool,
                highest: int | None) -> None:
        """A check sent found the workflow live (it raised otherwise); `run`: no row for the step;
        `highest`: the highest step id recorded for the workflow."""
        if owner is None or not run or (highest is not None and highest >= function_id):
            self._known.pop(workflow_id, None)  # a replay, or rows ahead: every check is sent
            return
        self._known[workflow_id] = _Clear(owner, function_id, time.monotonic())
        self._known.move_to_end(workflow_id)
        while len(self._known) > KEEP:
            self._known.popitem(last=False)

    def recorded(self, workflow_id: str, owner: str | None) -> None:
        """This execution's record went through: the workflow was still its own, so not cancelled."""
        known = self._known.get(workflow_id)
        if known is not None and known.owner == owner:
            known.confirmed_at = time.monotonic()
