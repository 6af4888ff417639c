"""What test_fuzz.py shares with other test modules, moved here so that no test module imports another:
`check_discord`."""

from __future__ import annotations

import re

import discord

DISCORD_PING = re.compile(r"@(?:everyone|here)|<(?:@[!&]?|#)\d+>", re.IGNORECASE)


CONTROLS = re.compile("[\x00\x1b\r\u200e\u200f\u202a-\u202e\u2066-\u2069]")


OUR_LINK = "https://example.test/thread/1"


def check_discord_text(text: str | None, limit: int) -> None:
    if text is None:
        return
    assert len(text) <= limit
    assert not DISCORD_PING.search(text), text[:200]
    assert "](" not in text.replace(f"]({OUR_LINK})", "")
    assert not CONTROLS.search(text)


def check_discord(*embeds: discord.Embed) -> None:
    assert sum(len(e) for e in embeds) <= 6000
    for embed in embeds:
        check_discord_text(embed.title, 256)
        check_discord_text(embed.description, 4096)
        check_discord_text(embed.footer.text, 2048)
        check_discord_text(embed.author.name, 256)
        assert len(embed.fields) <= 25
        for field in embed.fields:
            check_discord_text(field.name, 256)
            check_discord_text(field.value, 1024)
