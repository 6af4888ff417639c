"""Benchmarks that print the figures BENCHMARKS.md quotes: `python -m bench [--smoke] [--only NAME]`."""

BENCHES: tuple[str, ...] = ("overhead", "parallel", "slack_ack", "pacing", "recall", "tokens", "killharness", "durable")
