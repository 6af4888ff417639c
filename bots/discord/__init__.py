"""Discord adapter: `/debate` in a public thread, live turns, persistent votes and quotes, and the team in
the loop (notes while it runs, one more round after the verdict, rematches, channel defaults).

- `client.py`: `DebateBot` (a `commands.Bot` given the core; `setup_hook` adds the cogs, the persistent buttons and
  the restart notices) and `run_discord`.
- `commands.py`, `recall.py`, `loop.py`: the cogs (`/debate`, `/debate-stop` and votes; history, search, show and
  quotes; interject, continue, rematch, config and their forms in `forms.py`), the rules in `bots.commands` and
  `bots.loop`.
- `replies.py` private answers and the one place a failure becomes an ephemeral message; `access.py` who sees,
  stops and configures what; `buttons.py` the persistent buttons (`DynamicItem`s), which need nothing from the core.
- `output.py` what the bot writes outside interaction replies; `surface.py` Discord's surface for `bots.thread`,
  `render.py` its embeds; `sync.py` `debate discord-sync`.
"""

from bots.discord.client import DebateBot, ShardedDebateBot, debate_bot, point_discord_at, run_discord
from bots.discord.sync import SyncResult, sync_commands

__all__ = ["DebateBot", "ShardedDebateBot", "SyncResult", "debate_bot", "point_discord_at", "run_discord",
           "sync_commands"]
