"""Discord adapter: `/debate` in a public thread, live turns, persistent votes and quotes, and the team in
the loop (notes while it runs, one more round after the verdict, rematches, channel defaults).

Where each behaviour lives:

- `client.py`   `DebateBot` (a `commands.Bot`): gets the core in its constructor; `setup_hook` adds the
                cogs, registers the persistent buttons and starts the restart notices; `run_discord`.
- `commands.py` `DebateCog`: `/debate`, `/debate-stop` and the vote buttons' clicks; starting goes
                through `bots.commands` (the shared rules and the chat policy).
- `recall.py`   `RecallCog`: `/debate-history`, `-search`, `-show`, `-quote`, the Quote menu and button.
- `loop.py`     `LoopCog`: `/debate-interject`, `-continue`, `-rematch`, `-config` and the submitted
                Interject and Continue forms (`forms.py`); the rules are `bots.loop`'s.
- `replies.py`  private answers, and `report`, the one place a failure becomes an ephemeral message.
- `access.py`   who sees, stops and configures what: the `Scope` of an interaction (a thread counts as its
                parent channel), channel privacy (@everyone lacks View Channel), stop and settings rights,
                where a quote goes.
- `buttons.py`  the persistent buttons (`DynamicItem`s): vote, quote and Continue on a verdict,
                Interject on a running debate's root; a click dispatches a client event the cog listens
                to, or opens a form, so the buttons need nothing from the core or the client.
- `output.py`   what the bot writes with its token outside interaction replies: its pacer, threads,
                quotes, and each debate's sink.
- `surface.py`  Discord's surface for `bots.thread`: post, edit, limits, and how a debate looks;
                `render.py` the embeds; `sync.py` `debate discord-sync`.
"""

from bots.discord.client import DebateBot, ShardedDebateBot, debate_bot, point_discord_at, run_discord
from bots.discord.sync import SyncResult, sync_commands

__all__ = ["DebateBot", "ShardedDebateBot", "SyncResult", "debate_bot", "point_discord_at", "run_discord",
           "sync_commands"]
