"""`debate usage [--since 7d] [--by workspace|user|model|day] [--json]`: spend and tokens from the log,
read-only, every model call the log recorded (orchestrator/usage.py adds them up)."""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime

from bots.cli.running import EXIT_OK
from orchestrator.app import Core
from orchestrator.usage import BY, Usage, parse_since, usage


def add_parser(command: argparse.ArgumentParser) -> None:
    command.add_argument("--since", default="7d", help="a span back from now (7d, 24h, 30m, 2w) or a UTC date "
                         "(2026-03-01); default 7d")
    command.add_argument("--by", choices=BY, default="day", help="how to group the calls (default: day)")
    command.add_argument("--json", action="store_true")


def render_usage(found: Usage) -> str:
    since = datetime.fromtimestamp(found.since, UTC).strftime("%Y-%m-%d %H:%M UTC")
    width = max([len(line.key) for line in found.lines] + [len(found.by), 5])
    head = f"{found.by:<{width}}  {'calls':>6}  {'input tok':>11}  {'output tok':>11}  {'cost USD':>10}"
    rows = [f"{line.key:<{width}}  {line.calls:>6}  {line.input_tokens:>11,}  {line.output_tokens:>11,}"
            f"  {line.cost_usd:>10.4f}" for line in (*found.lines, found.total)]
    text = [f"Model calls since {since}, by {found.by}:", head, *rows[:-1], "-" * len(head), rows[-1]]
    if found.total.unpriced_calls:
        text.append(f"{found.total.unpriced_calls} calls used a model with no known price (not in the cost); "
                    f"at their vendors' highest prices the total is ${found.total.counted_usd:.4f}.")
    if found.total.estimated_calls:
        text.append(f"{found.total.estimated_calls} calls' tokens are estimated (about four characters a token): "
                    "the server reported no usage, e.g. a call that failed or timed out after streaming text.")
    return "\n".join(text)


def since_of(args: argparse.Namespace) -> float:
    """Where `--since` starts; ValueError (one sentence saying what it takes) when it cannot be read."""
    return parse_since(args.since, time.time())


async def usage_command(args: argparse.Namespace, since: float, core: Core) -> int:
    found = usage(await core.spent_calls(since), since, args.by)
    calibration = await core.calibration()
    if args.json:
        print(json.dumps({**found.model_dump(mode="json"), "calibration": calibration.as_json()}, indent=2))
    else:
        print(render_usage(found) + "\n\n" + calibration.text())
    return EXIT_OK
