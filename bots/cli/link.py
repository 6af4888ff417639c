"""`debate link ID [--revoke]`: the debate page's link, for the operator (bots/page/keys.py).

`--revoke` gives the debate a new key: every link made before answers 404 from then on. The log is
opened for writing (the key is made on first use) but nothing runs: no workflow, no recovery."""

from __future__ import annotations

import argparse
import sys

from bots.cli.running import EXIT_OK, UsageError
from bots.settings import BotSettings
from orchestrator.log import open_log
from orchestrator.log.audit import OPERATOR
from orchestrator.log.records import AmbiguousIdError

NO_PUBLIC_URL = ("DEBATE_PUBLIC_URL is not set; set it to the address the fronts are reached at "
                 "(e.g. https://debate.example.com) to make page links")


async def link(args: argparse.Namespace, settings: BotSettings) -> int:
    # the page's server side (aiohttp.web, jinja2, markdown) loads here: every other command does without
    from bots.page import page_link
    from bots.page.keys import public_url

    if public_url(settings) is None:
        raise UsageError(NO_PUBLIC_URL)
    async with open_log(settings.debate_database_url or settings.debate_db) as store:
        try:
            record = await store.get_debate(args.id, turns=False)
        except AmbiguousIdError as exc:
            raise UsageError(str(exc)) from None
        if record is None:
            raise UsageError(f"no debate with id {args.id!r}; `debate history` lists them")
        url = await page_link(store, settings, record.id, renew=args.revoke)
        if args.revoke:
            await store.add_audit(OPERATOR.entry("link_revoke", record.id, "a new page key; earlier links answer 404"))
    print(url)
    if args.revoke:
        print("a new key: every earlier link to this debate now answers 404", file=sys.stderr)
    return EXIT_OK
