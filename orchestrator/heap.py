"""Keep the cyclic garbage collector's passes short in a long-running process.

CPython's full (generation 2) collection walks every container object the process has, with the GIL held, and most
of a front's or a worker's are made once at start (the modules, classes and functions of the SDKs, DBOS, SQLAlchemy,
bolt, discord.py): a full pass over them holds up every Slack ack in flight (answered on a thread of its own, which
still needs the GIL). `settle()`, called once a process has built what it keeps, collects what start-up left over and
moves everything still alive to the permanent generation (`gc.freeze`): later passes skip it. Reference counting
still frees a frozen object; only a cycle among frozen objects would stay, and start-up leaves none worth a pause.

It then makes the young generation's passes rarer (`YOUNG_THRESHOLD`; CPython starts one every 700 new container
objects): a debate makes short-lived objects fast (a pydantic model, a dict, a few frames per event), reference
counting frees almost all of them, and what a frequent pass finds alive is promoted and walked again by the middle
generation. A young pass over at most `YOUNG_THRESHOLD` objects stays well inside an ack's budget.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000  # new container objects between two young passes (CPython's default: 700)
OLDER_THRESHOLD = 20  # passes of one generation between two of the next (default: 10)


def settle() -> int:
    """Collect start-up's garbage, freeze what is left and make the young passes rarer; the number of
    objects frozen in all."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)
    return gc.get_freeze_count()
