"""What test_budgets_slack.py shares with other test modules, moved here so that no test module imports another:
`LONG`."""

from __future__ import annotations

LONG = " ".join(f"evidence{n:04d}" for n in range(1400))  # a turn that costs cents (and is no loop: repeats.py)
