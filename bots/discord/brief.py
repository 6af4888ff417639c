"""A Discord message, its attachments and its thread as materials for a debate's brief, and **Debate this**,
the message context menu that starts a debate over them.

The context menu answers with a form asking for the topic (prefilled from the message's first line). The
form's `custom_id` carries the channel and the message (`debate:this-form:{channel}:{message}`), so its
submission is read from the interaction alone, after a restart too; the message is fetched again then, so
the brief is what the message says when the debate starts. A message inside a thread brings the thread's
other messages, and its debate starts in the thread's channel. Attachments are read from Discord's CDN
(at most 20 MB each); a link the user types goes through orchestrator/brief/fetch.py.
"""

from __future__ import annotations

import logging
import re

import discord
from discord import app_commands, ui
from discord.ext import commands

from bots.commands import CommandError, start_request
from bots.discord.forms import text_field
from bots.discord.replies import report
from orchestrator.brief.gather import MAX_FILE_BYTES, Material
from orchestrator.models import MAX_TOPIC_CHARS

log = logging.getLogger(__name__)

FORM = re.compile(r"^debate:this-form:(?P<channel>\d+):(?P<message>\d+)$")
TOPIC_FIELD = "topic"
MAX_THREAD_MESSAGES = 200


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:200]


async def attachment_material(attachment: discord.Attachment) -> Material:
    """An uploaded file, read from Discord's CDN; CommandError past the file size limit."""
    if attachment.size > MAX_FILE_BYTES:
        raise CommandError(f"`{attachment.filename}` is {attachment.size / 2**20:.1f} MB; a file for the brief may be "
                           f"at most {MAX_FILE_BYTES // 2**20} MB.")
    try:
        data = await attachment.read()
    except discord.HTTPException as exc:
        raise CommandError(f"I couldn't read `{attachment.filename}` from Discord ({exc.status}); try again.") from None
    return Material(origin=attachment.filename, name=attachment.filename, media_type=attachment.content_type,
                    data=data)


async def message_materials(message: discord.Message) -> list[Material]:
    """The message's text, each attachment, and (inside a thread) the thread's other messages."""
    where = f"{message.channel.id}/{message.id}"
    materials: list[Material] = []
    if message.content.strip():
        materials.append(Material.from_text(message.content, kind="message", origin=f"Discord message {where}",
                                            title=first_line(message.content) or "Discord message"))
    for attachment in message.attachments:
        materials.append(await attachment_material(attachment))
    if isinstance(message.channel, discord.Thread):
        lines = []
        async for other in message.channel.history(limit=MAX_THREAD_MESSAGES, oldest_first=True):
            if other.id != message.id and other.content.strip():
                lines.append(f"{other.author.display_name}: {other.content}")
        if lines:
            replies = f"{len(lines)} message{'s' if len(lines) != 1 else ''}"
            materials.append(Material.from_text("\n\n".join(lines), kind="thread",
                                                origin=f"Discord thread {message.channel.id}",
                                                title=f"Thread: {message.channel.name} ({replies})"))
    return materials


def topic_form(channel_id: int, message_id: int, topic: str) -> ui.Modal:
    form = ui.Modal(title="Debate this", custom_id=f"debate:this-form:{channel_id}:{message_id}")
    form.add_item(ui.Label(
        text="Topic", description="The debaters and the judge read the message, its files and its thread.",
        component=ui.TextInput(custom_id=TOPIC_FIELD, style=discord.TextStyle.short, required=True,
                               max_length=min(MAX_TOPIC_CHARS, 4000), default=topic or None,
                               placeholder="The question to debate, e.g. Should we adopt this RFC?"),
    ))
    return form


class DebateThisCog(commands.Cog, name="Debate this"):
    """The **Debate this** message menu and its form; the debate starts through `DebateCog.start_debate`."""

    def __init__(self, bot: commands.Bot, debates: commands.Cog) -> None:
        self.bot = bot
        self.debates = debates
        self.menu = app_commands.guild_only(app_commands.ContextMenu(name="Debate this", callback=self.debate_this))
        self.menu.error(report)

    async def cog_load(self) -> None:
        self.bot.tree.add_command(self.menu)

    async def cog_unload(self) -> None:
        self.bot.tree.remove_command(self.menu.name, type=self.menu.type)

    async def debate_this(self, interaction: discord.Interaction, message: discord.Message) -> None:
        """Start a debate whose brief is this message, its files and its thread."""
        form = topic_form(message.channel.id, message.id, first_line(message.content))
        form.stop()  # read back from its custom_id (`on_interaction`), never from this object
        await interaction.response.send_modal(form)

    @commands.Cog.listener()
    async def on_interaction(self, interaction: discord.Interaction) -> None:
        if interaction.type is not discord.InteractionType.modal_submit or not isinstance(interaction.data, dict):
            return
        found = FORM.match(str(interaction.data.get("custom_id") or ""))
        if found is None:
            return
        try:
            await self._submitted(interaction, int(found["channel"]), int(found["message"]))
        except Exception as exc:
            await report(interaction, exc)

    async def _submitted(self, interaction: discord.Interaction, channel_id: int, message_id: int) -> None:
        command = start_request(text_field(interaction.data, TOPIC_FIELD) or "")  # type: ignore[arg-type]
        channel = interaction.channel
        if channel is None or channel.id != channel_id:
            raise CommandError("Use Debate this on a message in the channel you are in.")
        await interaction.response.defer(thinking=True)
        message = await channel.fetch_message(message_id)  # type: ignore[union-attr]
        materials = await message_materials(message)
        if not materials:
            raise CommandError("That message has no text, files or thread to debate; nothing started.")
        home = channel.parent if isinstance(channel, discord.Thread) else channel
        await self.debates.start_debate(interaction, command, materials, home)  # type: ignore[attr-defined]
