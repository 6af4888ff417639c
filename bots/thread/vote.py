"""A vote on a verdict, written once for every platform: checked, recorded, and what the message shows next.

A platform turns a click into `cast_vote(...)` and renders the `VerdictShown` it returns with its own
surface's `verdict(spec, verdict, tally, outcome)` (the one place its verdict message is drawn), then
edits the clicked message with it.

A vote counts only on a finished debate visible from where the button was clicked (the log checks the
Scope again when it records the vote) and held there (its channel or its thread): a copied or forged
button on another debate is refused without naming it. A continued debate has a verdict message per
verdict, all with buttons: the one clicked shows its own verdict again (found by its key in the log:
`verdict`, `verdict:2`, …), never the latest.
"""

from __future__ import annotations

from dataclasses import dataclass

from bots.commands import CommandError
from bots.thread.keys import VERDICT
from orchestrator.app import Core
from orchestrator.log import DebateNotFoundError, DebateRecord, Scope, Tally
from orchestrator.models import DebateSpec, Outcome, Verdict, Vote

NOT_A_VOTE = "That vote doesn't match a finished debate you can see here."
AGREE, DISAGREE = "agree", "disagree"


@dataclass(frozen=True)
class VerdictShown:
    """What the clicked verdict message shows after the vote: the surface renders exactly this."""

    spec: DebateSpec
    verdict: Verdict
    tally: Tally
    outcome: Outcome | None  # the debate's counts once it has ended (None while a continuation runs)


def choices(record: DebateRecord) -> set[str]:
    """The choices a vote on `record` may take: agree or disagree with the verdict, or side with a seat."""
    return {AGREE, DISAGREE} | {f"side:{seat.label}" for seat in record.seats}


def describe(choice: str) -> str:
    """The user's choice in the words the private confirmation uses."""
    if choice.startswith("side:"):
        return f"convinced by {choice.removeprefix('side:')}"
    return f"{choice} with the recommendation"


async def cast_vote(core: Core, *, debate_id: str, choice: str, user: str, platform: str, scope: Scope,
                    where: str, message_id: str) -> VerdictShown:
    """Record `user`'s `choice` on debate `debate_id`, clicked on message `message_id` in channel `where`;
    returns what that message is to show now. Raises CommandError (`NOT_A_VOTE`) for anything else."""
    record = await core.debate(debate_id, scope, turns=False)  # seats and verdicts, not the turns
    if record is None or record.spec is None or record.verdict is None or choice not in choices(record) \
            or where not in (record.channel, record.thread):
        raise CommandError(NOT_A_VOTE)
    try:
        tally = await core.record_vote(Vote(debate_id=record.id, user=user, choice=choice, platform=platform),
                                       scope)
    except DebateNotFoundError:
        raise CommandError(NOT_A_VOTE) from None
    fresh = await core.debate(record.id, scope, turns=False) or record
    return VerdictShown(record.spec, await shown_verdict(core, record, message_id), tally, outcome_of(fresh))


async def shown_verdict(core: Core, record: DebateRecord, message_id: str) -> Verdict:
    """The verdict the message `message_id` shows: the first for `verdict`, the Nth for `verdict:N`."""
    assert record.verdict is not None
    verdicts = record.verdicts or (record.verdict,)
    for key, message in (await core.messages(record.id)).items():
        name, _, number = key.partition(":")
        if message.message_id == message_id and name == VERDICT and (number == "" or number.isdigit()):
            n = int(number or 1)
            return verdicts[n - 1] if 0 < n <= len(verdicts) else record.verdict
    return record.verdict


def outcome_of(record: DebateRecord) -> Outcome | None:
    """The counts a finished debate's verdict shows (rounds, tokens, cost, warnings); None while it runs again."""
    if record.finished_at is None or record.status == "running":
        return None
    return Outcome(status=record.status, rounds_completed=record.rounds_completed,
                   rounds_planned=record.rounds_planned, input_tokens=record.input_tokens,
                   output_tokens=record.output_tokens, cost_usd=record.cost_usd, warnings=record.warnings)
