"""Benchmarks that print the figures BENCHMARKS.md quotes: `python -m bench [--smoke] [--only NAME]`."""

BENCHES: tuple[str, ...] = (
    "overhead", "parallel", "slack_ack", "pacing", "recall", "recall_pg", "tokens", "killharness", "durable",
    "durable_pg", "metrics_cost", "council", "jury", "page", "brief", "evidence",
)
