"""What test_admission_slack.py shares with other test modules, moved here so that no test module imports another:
`LIMITS`."""

from __future__ import annotations

from bots.slack.surface import slack_limits

LIMITS = slack_limits(post_interval=0.01, updates=1000, window=1.0, edit_interval=0.05)
