"""The team in the loop, the same on every surface: interject, continue, rematch, and each channel's defaults.

Slack, Discord and the CLI each turn their own input into these calls (the words: bots/grammar.py) and show what
comes back; every refusal is a `CommandError` holding one sentence for the user.

- `interject`: an audience note for a running debate, waiting in the log until the engine's next round takes up to
  MAX_INTERJECTIONS_PER_ROUND of them (orchestrator/debate/audience.py).
- `prepare_continuation` / `start_continuation`: one more round after the verdict, with optional new facts, as the
  debate's next segment, admitted under the quotas for the person asking; a worker runs it and the front renders it
  into the same thread.
- `rematch_request`: the same topic with other debaters or another format, a new debate linked to the first.
- `channel_config` / `set_channel_config` / `config_text`: what `/debate config` shows and sets; who may set it is
  each platform's rule, checked by the surface before it calls here.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict, ValidationError

from bots.commands import CommandError, StartDebate, start_request
from bots.grammar import CLEARED, CONFIG_KEYS, parse_config, parse_switch
from bots.thread.keys import ROOT, root_key
from bots.thread.tail import FrontTailer
from orchestrator.app import NOT_A_FRONT, RESTARTING, Core
from orchestrator.budgets import estimate_usd
from orchestrator.config import Settings
from orchestrator.log import (
    AmbiguousIdError,
    ContinuationRefused,
    DebateRecord,
    InterjectionRefused,
    Scope,
)
from orchestrator.models import (
    EFFORTS,
    FORMATS,
    MAX_CONTINUATIONS,
    MAX_INTERJECTION_CHARS,
    MAX_INTERJECTIONS_PER_ROUND,
    ChannelDefaults,
    Interjection,
    Outcome,
)
from orchestrator.policy import ChatPolicy, NotAllowed
from orchestrator.providers import (
    ModelStringError,
    ProviderNotConfiguredError,
    UnknownProviderError,
    parse_model,
)
from orchestrator.quotas import Quota, QuotaExceeded

__all__ = ["Asker", "channel_config", "config_text", "interject", "parse_config", "prepare_continuation",
           "rematch_request", "rematch_shown_beside", "set_channel_config", "start_continuation"]

log = logging.getLogger(__name__)

OPERATOR = "operator"  # the author of a note given on the host (the CLI), where no one is signed in
SEAT_ROLES = {"proposer": "proposer", "challenger": "challenger", "judge": "judge"}


class Asker(BaseModel):
    """Who asks, from where: the platform's user id, the name shown with their notes, and what they may see."""

    model_config = ConfigDict(frozen=True)

    platform: str
    user: str
    author: str  # display name
    scope: Scope


# ---- finding the debate


async def _find(core: Core, debate_id: str, scope: Scope | None) -> DebateRecord:
    try:
        record = await core.debate(debate_id.strip().lower(), scope, turns=False)
    except AmbiguousIdError as exc:
        raise CommandError(f"The id `{exc.prefix}` matches several debates here; type more of it.") from None
    if record is None:
        raise CommandError(f"No debate matches `{debate_id.strip()}` here.")
    return record


def _note(debate_id: str, text: str, asker: Asker | None, kind: str) -> Interjection:
    """The note as the log will keep it; CommandError when it is empty or too long."""
    try:
        return Interjection(debate_id=debate_id, text=text, kind=kind,  # type: ignore[arg-type]
                            author=asker.author if asker is not None else OPERATOR,
                            user=asker.user if asker is not None else None,
                            platform=asker.platform if asker is not None else "cli")
    except ValidationError as exc:
        problem = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        what = "The new facts are" if kind == "facts" else "Your note is"
        if "empty" in problem:
            raise CommandError(f"{what} empty: write what the debaters should know.") from None
        raise CommandError(f"{what} {len(text.strip()):,} characters; the limit is {MAX_INTERJECTION_CHARS}. "
                           "Shorten it and try again.") from None


# ---- interject


async def interject(core: Core, debate_id: str, text: str, asker: Asker) -> Interjection:
    """Store `text` as an audience note for the running debate's next round; returns the stored note.
    Refused when the debate is not found here or not running, when its channel turned interjections
    off, when the note is empty or too long, or when MAX_INTERJECTIONS_PER_ROUND notes wait already."""
    record = await _find(core, debate_id, asker.scope)
    if record.status != "running":
        raise CommandError(f"Debate `{record.id}` is {record.status}; audience notes reach only a debate in progress.")
    if record.channel is not None and record.platform is not None:
        defaults = await core.channel_defaults(record.platform, record.workspace, record.channel)
        if not defaults.interjections:
            raise CommandError("Interjections are turned off in this debate's channel; a channel admin can turn "
                               "them on with `/debate config interjections=on`.")
    note = _note(record.id, text, asker, "interjection")
    try:
        await core.add_interjection(note, max_waiting=MAX_INTERJECTIONS_PER_ROUND)
    except InterjectionRefused as exc:
        raise CommandError(str(exc)) from None
    return note


# ---- continue


async def prepare_continuation(core: Core, debate_id: str, facts: str | None,
                               asker: Asker | None) -> tuple[DebateRecord, int]:
    """Begin the debate's next segment in the log: checked (completed, with a verdict, continued fewer
    than MAX_CONTINUATIONS times, the process not stopping), admitted under the same quotas as a new
    debate for the person asking (who then holds its running slot), the facts stored as a waiting note,
    the debate running again; returns its record (as it was) and the new segment's number. `asker`
    None: the operator (the CLI), who sees every debate and is held to the global cap only."""
    if core.stopping:
        raise CommandError(RESTARTING)
    record = await _find(core, debate_id, asker.scope if asker is not None else None)
    if record.status == "running":
        raise CommandError(f"Debate `{record.id}` is still running; continue it once it has a verdict.")
    if record.status != "completed" or record.verdict is None:
        raise CommandError(f"Debate `{record.id}` ended without a verdict ({record.status}); only a completed "
                           "debate with a verdict can be continued.")
    if record.segment - 1 >= MAX_CONTINUATIONS:
        raise CommandError(f"Debate `{record.id}` has been continued {MAX_CONTINUATIONS} times, the most a debate "
                           "can be.")
    note = _note(record.id, facts, asker, "facts") if facts and facts.strip() else None
    quota = (Quota.operator(core.settings.debate_max_concurrent) if asker is None
             else Quota.from_settings(core.settings))
    if quota.budget is not None and record.spec is not None:  # one more round and its verdict
        quota = quota.for_cost(estimate_usd(record.spec, rounds=1))
    try:
        segment = await core.begin_continuation(record.id, quota=quota, facts=note,
                                                      requested_by=asker.user if asker is not None else None)
    except ContinuationRefused as exc:
        raise CommandError(str(exc)) from None
    except QuotaExceeded as exc:
        raise CommandError(exc.user_text()) from None
    return record, segment


async def start_continuation(core: Core, tailer: FrontTailer | None, debate_id: str, facts: str | None,
                             asker: Asker | None, request_key: str | None = None) -> int:
    """What a chat front does for `continue`: the segment begun in the log, the thread's root shown
    running again, the segment queued for a worker and followed into the same thread; returns its number."""
    if core.feed is None or tailer is None:
        raise CommandError(NOT_A_FRONT)
    record, segment = await prepare_continuation(core, debate_id, facts, asker)
    root = (await core.messages(record.id)).get(ROOT)
    try:
        if root is not None:  # the root shows the verdict as final: it is to show this segment's progress and end
            await core.show_message(record.id, root_key(segment), root.platform or tailer.platform,
                                    root.channel, root.message_id, final=False)
        await core.feed.enqueue_continuation(record.id, segment, request_key)
    except BaseException:  # nothing will run it: the debate must not stay "running"
        await core.fail(record.id, Outcome(
            status="failed", rounds_completed=record.rounds_completed, rounds_planned=record.rounds_planned,
            error="the continuation could not be queued"))
        raise
    await tailer.follow_segment(record.id, segment)
    return segment


# ---- rematch


def rematch_request(record: DebateRecord, *, vs: str | None, format: str | None,
                    judges: str | None = None) -> StartDebate:
    """The request that replays `record`'s topic as a new debate: its debaters unless `vs` names others,
    its format unless `format` says another (the rounds then are that format's default), its judge and
    effort; checked like any start (the surface's start path holds it to the chat policy)."""
    spec = record.spec
    if spec is None:
        raise CommandError(f"Debate `{record.id}` was logged without its settings, so it cannot be replayed.")
    fmt = format or spec.format
    command = start_request(
        spec.topic, format=fmt, rounds=spec.rounds if fmt == spec.format else None,
        debaters=vs if vs else tuple(seat.model for seat in spec.seats), judge=spec.judge, effort=spec.effort,
        judges=judges if judges else (spec.judges or None),
    )
    return command.model_copy(update={"rematch_of": record.id})


def rematch_shown_beside(rematch: DebateRecord, original: DebateRecord) -> bool:
    """Whether a notice of `rematch` (its id, models, a link to its thread) may go into `original`'s
    thread: only when everyone who reads that thread may see the rematch too, so a private channel's
    debate never shows elsewhere. Asked in the same channel, or in a public one (unknown privacy counts
    as private)."""
    return rematch.channel == original.channel or rematch.channel_private is False


# ---- channel defaults


async def channel_config(core: Core, platform: str, workspace: str | None, channel: str) -> ChannelDefaults:
    return await core.channel_defaults(platform, workspace, channel)


def _checked(key: str, value: str, policy: ChatPolicy, core: Core) -> object:
    """One setting's value, checked like the start option of the same name and held to the chat policy."""
    try:
        if key in SEAT_ROLES:
            model = value.strip()
            parse_model(model)
            policy.check_model(model, SEAT_ROLES[key])
            core.registry.check(model)  # a model whose credential or tool is missing is refused now
            return model
        if key == "judges":
            jury = start_request("x", judges=value).judges or ()
            for model in jury:
                policy.check_model(model, "judge")
                core.registry.check(model)
            return jury
        if key == "format":
            start_request("x", format=value)
            return value
        if key == "rounds":
            rounds = start_request("x", rounds=value).rounds
            assert rounds is not None
            return policy.rounds(rounds, rounds)
        if key == "effort":
            start_request("x", effort=value)
            return policy.effort(value, value)
        return parse_switch(value)
    except (ModelStringError, UnknownProviderError, ProviderNotConfiguredError, NotAllowed) as exc:
        raise CommandError(str(exc)) from None


async def set_channel_config(core: Core, platform: str, workspace: str | None, channel: str,
                             assignments: dict[str, str], by: str | None) -> ChannelDefaults:
    """Change the channel's defaults (`key=` or `key=default` clears one); returns them all. Each value
    is checked like a start option and held to the operator's chat policy; nothing changes unless every
    one passes. Who may call this (channel admins) is the surface's check."""
    unknown = sorted(set(assignments) - set(CONFIG_KEYS))
    if unknown:
        raise CommandError(f"Unknown setting `{unknown[0]}`. Settings: {', '.join(CONFIG_KEYS)}.")
    policy = ChatPolicy(core.settings, core.registry)
    changes: dict[str, object] = {}
    for key, value in assignments.items():
        if value.strip().lower() in CLEARED:
            changes[key] = True if key == "interjections" else None
        else:
            changes[key] = _checked(key, value, policy, core)
    current = await core.channel_defaults(platform, workspace, channel)
    updated = ChannelDefaults.model_validate(current.model_dump() | changes)
    await core.set_channel_defaults(platform, workspace, channel, updated, by=by)
    return updated


def config_text(defaults: ChannelDefaults, settings: Settings) -> str:
    """What `/debate config` shows: each setting, set here or the operator's default, and how to change it."""
    operator: dict[str, object] = {
        "proposer": settings.debate_proposer, "challenger": settings.debate_challenger,
        "judge": settings.debate_judge, "judges": ",".join(settings.debate_judges) or None,
        "format": settings.debate_format, "rounds": None,
        "effort": settings.debate_effort,
    }
    lines = ["Debate settings for this channel:"]
    for key in CONFIG_KEYS:
        if key == "interjections":
            lines.append(f"• interjections: {'on' if defaults.interjections else 'off'}")
            continue
        value = getattr(defaults, key)
        if isinstance(value, tuple):
            value = ",".join(value)
        if value is not None:
            lines.append(f"• {key}: {value} (set here)")
        else:
            fallback = operator[key]
            lines.append(f"• {key}: the bot's default" + (f" ({fallback})" if fallback else ""))
    lines.append("Channel admins change them with `/debate config key=value …` (`key=default` clears one). "
                 f"Formats: {', '.join(FORMATS)}; efforts: {', '.join(EFFORTS)}.")
    return "\n".join(lines)
