"""The step sequences a resumed debate replays against, checked in (step_fingerprints.json).

DBOS replays a workflow by matching each step to its record by step id and function name. A step id is
drawn in call order, and `Durable.gather` reserves LANE_SLOTS ids per parallel branch, so one model call
or notice more (or fewer, or moved) shifts the ids or names of every step after it: a debate in flight
at that deploy stops with "function a was recorded when b was expected", or silently gets another
step's result when the names agree. Such a change needs a new WORKFLOW_VERSION (config.py).

The fingerprint of a scripted debate is what DBOS recorded for it, one `"<step id> <function name>"`
per step, in step id order (the gaps are the unused slots of a gather's lanes), a turn's step followed
by its turn's key. The file keeps one entry
per WORKFLOW_VERSION, each a scenario → fingerprint map; tests/test_step_fingerprints.py records every
scenario again and compares. A version's entry, once written, is never rewritten: a changed sequence
takes a new version, then REGENERATE adds its entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

FINGERPRINTS_FILE = Path(__file__).with_name("step_fingerprints.json")
REGENERATE = "DEBATE_WRITE_FINGERPRINTS=1 .venv/bin/python -m pytest tests/test_step_fingerprints.py -q"

Fingerprint = list[str]


def fingerprint(steps: Iterable[Mapping[str, Any]]) -> Fingerprint:
    """A workflow's recorded steps (`DBOS.list_workflow_steps`, with outputs) as `"<step id> <function name>"`
    lines, each followed by the key of the event its result ends with, where it has one (a turn's)."""
    return [f"{s['function_id']} {s['function_name']}{_said(s.get('output'))}"
            for s in sorted(steps, key=lambda s: s["function_id"])]


def _said(output: Any) -> str:
    """Which turn a turn's step played: two steps of one name swapped (two seats' turns) replay without an
    error and hand each seat the other's answer, so the fingerprint tells them apart."""
    key = getattr(getattr(output, "event", None), "key", None)
    return f" {key}" if isinstance(key, str) else ""


def load(path: Path = FINGERPRINTS_FILE) -> dict[str, dict[str, Fingerprint]]:
    """Every version's fingerprints: version → scenario → fingerprint (empty when there is no file)."""
    if not path.exists():
        return {}
    data: dict[str, dict[str, Fingerprint]] = json.loads(path.read_text())
    return data


def mismatch(version: str, recorded: Mapping[str, Fingerprint], path: Path = FINGERPRINTS_FILE) -> str | None:
    """None when `recorded` (scenario → fingerprint) is what `version` checked in; else what changed and what to do."""
    known = load(path).get(version)
    if known is None:
        return f"no step fingerprints are checked in for WORKFLOW_VERSION {version}: generate them with `{REGENERATE}`"
    problems = []
    for scenario in sorted(set(known) | set(recorded)):
        if scenario not in recorded:
            problems.append(f"{scenario}: checked in, not recorded by the test")
        elif scenario not in known:
            problems.append(f"{scenario}: recorded, not checked in")
        elif (change := _first_difference(known[scenario], recorded[scenario])) is not None:
            problems.append(f"{scenario}: {change}")
    if not problems:
        return None
    return (f"the step sequence changed under WORKFLOW_VERSION {version}, so debates in flight at a deploy would "
            f"replay against the wrong steps ({'; '.join(problems)}): bump WORKFLOW_VERSION in "
            f"orchestrator/durable/config.py and regenerate with `{REGENERATE}`")


def write(version: str, recorded: Mapping[str, Fingerprint], path: Path = FINGERPRINTS_FILE) -> None:
    """Add `version`'s fingerprints to the file. Refused when the version has different ones already:
    rewriting them would hide the change from the debates recorded under that version. A scenario the
    version lacks (a new format's) is added: no debate in flight replays against it."""
    data = load(path)
    known = data.get(version)
    if known is not None and any(recorded.get(scenario) != steps for scenario, steps in known.items()):
        raise ValueError(f"WORKFLOW_VERSION {version} has other step fingerprints checked in: bump WORKFLOW_VERSION "
                         "in orchestrator/durable/config.py first, then regenerate")
    data[version] = {scenario: list(recorded[scenario]) for scenario in sorted({*recorded, *(known or {})})}
    path.write_text(json.dumps(data, indent=2) + "\n")


def _first_difference(known: Fingerprint, recorded: Fingerprint) -> str | None:
    for i, (was, now) in enumerate(zip(known, recorded, strict=False)):
        if was != now:
            return f"step {i + 1} was `{was}`, now `{now}`"
    if len(known) != len(recorded):
        return f"{len(known)} steps checked in, {len(recorded)} recorded"
    return None
