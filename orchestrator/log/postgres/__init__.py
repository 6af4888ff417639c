"""The debate log on Postgres: the second `DebateLog`, for a log shared by several hosts.

`PostgresLog` (store.py) is what `open_log` returns for a `postgresql://` URL. Inside: schema.py
holds the numbered migrations, reads.py, writes.py and search.py the SQL.
"""

from __future__ import annotations

from orchestrator.log.postgres.store import PostgresLog, redact_url

__all__ = ["PostgresLog", "redact_url"]
