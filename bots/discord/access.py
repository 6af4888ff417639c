"""Who may see and stop what in Discord: the `Scope` of an interaction, channel privacy, stop rights.

The rules (README "Security and limits", CONTRACT "Who sees what"): a debate records its guild (`workspace`) and
whether its channel is private (@everyone lacks View Channel; anything not a guild channel, or whose privacy the bot
cannot work out, counts as private), known before its first write to the log (`chat_spec`). Debates start only in
guild text channels; `start_channel` says why anywhere else. Every read from chat passes `scope_of(interaction)`: the
guild and the channel asked from, a thread's being its parent (Discord shows a thread only to those who see its
parent, and a debate is logged under the parent), so votes and quotes from inside a debate's thread see it; a DM sees
only debates started in that DM, which is none. Stopping is for the requester or a member with Manage Messages in the
debate's channel, as Discord resolved it for the interaction (so from its channel or its thread). A channel's
defaults (`/debate-config`) are changed by members with Manage Messages (or Administrator) there; a thread's are its
parent's.
"""

from __future__ import annotations

import discord

from bots.commands import CommandError
from orchestrator.log import DebateRecord, Scope

PLATFORM = "discord"


def home_channel(channel: object) -> discord.abc.Snowflake | None:
    """The channel a place counts as: a thread's parent (when known), else the channel itself."""
    if isinstance(channel, discord.Thread):
        return channel.parent or discord.Object(channel.parent_id)
    return channel if isinstance(channel, discord.abc.Snowflake) else None


def is_private(channel: object) -> bool:
    """True unless `channel` (or a thread's parent) is a guild channel @everyone may view."""
    if isinstance(channel, discord.Thread):
        channel = channel.parent
    if not isinstance(channel, discord.abc.GuildChannel):
        return True
    everyone = channel.guild.default_role
    return everyone is None or not channel.permissions_for(everyone).view_channel


DM_REFUSAL = "Start debates in a server's text channel; debates cannot run in direct messages."
THREAD_REFUSAL = "Start debates in a text channel: threads cannot hold threads of their own."
OTHER_REFUSAL = "Start debates in a server's text channel; {where} cannot hold a debate's thread."
CHANNEL_KINDS = {
    discord.ChannelType.voice: "a voice channel",
    discord.ChannelType.stage_voice: "a stage channel",
    discord.ChannelType.forum: "a forum channel",
    discord.ChannelType.media: "a media channel",
    discord.ChannelType.category: "a category",
}


def start_channel(interaction: discord.Interaction) -> discord.TextChannel:
    """The guild text channel `/debate` was used in; anywhere else a `CommandError` saying why, in one
    sentence for each kind of place (the command is guild_only, yet a DM's interaction still runs it)."""
    channel = interaction.channel
    if interaction.guild_id is None or isinstance(channel, discord.DMChannel | discord.GroupChannel):
        raise CommandError(DM_REFUSAL)
    if isinstance(channel, discord.Thread):
        raise CommandError(THREAD_REFUSAL)
    if isinstance(channel, discord.TextChannel):
        return channel
    kind = getattr(channel, "type", None)
    raise CommandError(OTHER_REFUSAL.format(where=CHANNEL_KINDS.get(kind, "this channel")))  # type: ignore[arg-type]


def scope_of(interaction: discord.Interaction) -> Scope:
    """What a chat read from this interaction may see: its guild's public channels, and its own channel."""
    home = home_channel(interaction.channel)
    return Scope(platform=PLATFORM, workspace=str(interaction.guild_id) if interaction.guild_id else None,
                 channel=str(home.id) if home is not None else None,
                 channel_private=is_private(interaction.channel))


def may_stop(interaction: discord.Interaction, record: DebateRecord) -> bool:
    """The requester, or a member with Manage Messages asking from the debate's channel or thread."""
    if record.requested_by is not None and record.requested_by == str(interaction.user.id):
        return True
    home = home_channel(interaction.channel)
    if home is None or str(home.id) != record.channel or str(interaction.guild_id) != record.workspace:
        return False
    permissions = interaction.permissions
    return permissions.manage_messages or permissions.administrator


def may_configure(interaction: discord.Interaction) -> bool:
    """A guild member with Manage Messages or Administrator in the channel asked from (stop's moderator rule)."""
    if interaction.guild_id is None or not isinstance(interaction.user, discord.Member):
        return False
    permissions = interaction.permissions
    return permissions.manage_messages or permissions.administrator


def quote_target(record: DebateRecord, scope: Scope) -> tuple[int, int] | None:
    """(channel id, guild id) a quote of `record` may be posted in: the debate's own channel, and only
    in the asker's guild; None when there is no such place (another platform, another guild)."""
    if record.platform != PLATFORM or not record.channel or scope.workspace is None:
        return None
    if record.workspace is None:  # logged before guilds were: only from inside its own channel
        if record.channel != scope.channel:
            return None
    elif record.workspace != scope.workspace:
        return None
    return int(record.channel), int(scope.workspace)
