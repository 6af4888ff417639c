"""What test_slack_pacing.py shares with other test modules, moved here so that no test module imports another:
`shown_turns_match_the_log`."""

from __future__ import annotations

from bots.slack.blocks import turn_header
from bots.slack.markdown import neutralize_markdown
from bots.thread import turn_key
from orchestrator.events import TurnStarted
from orchestrator.log import Store
from orchestrator.models import Turn
from tests.fakes.slack_api import SlackAPIPeer


def header_of(debate_id: str, turn: Turn) -> str:
    return turn_header(TurnStarted(debate_id=debate_id, round=turn.round, seat=turn.seat, role=turn.role,
                                   kind=turn.kind, model=turn.model))


async def shown_turns_match_the_log(store: Store, peer: SlackAPIPeer, debate_id: str) -> int:
    """Every logged turn's message(s) show exactly its text under its header; returns how many turns."""
    record = await store.get_debate(debate_id)
    assert record is not None and record.channel is not None
    for turn in record.turns:
        ts = await store.get_message(debate_id, turn_key(turn.round, turn.seat, turn.kind, 0))
        assert ts is not None, turn
        shown = peer.message(record.channel, ts).markdown
        assert shown == f"{header_of(debate_id, turn)}\n{neutralize_markdown(turn.text)}"
    return len(record.turns)
