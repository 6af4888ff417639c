"""What test_slack_markdown.py shares with other test modules, moved here so that no test module imports another:
`turn_messages`."""

from __future__ import annotations

from bots.thread import turn_key
from tests.fakes.slack_api import Message, SlackAPIPeer, SlackBot


async def turn_messages(bot: SlackBot, peer: SlackAPIPeer, debate_id: str, channel: str) -> list[Message]:
    """The proposer's opening turn, part 0 first, as the log recorded its messages."""
    recorded = await bot.core.store.messages(debate_id)
    parts, part = [], 0
    while (record := recorded.get(turn_key(1, "A", "opening", part))) is not None:
        parts.append(peer.message(channel, record.message_id))
        part += 1
    return parts
