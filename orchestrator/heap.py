"""Keep the cyclic garbage collector's full passes short in a long-running process.

CPython's full (generation 2) collection walks every container object the process has. Most of a
front's or a worker's are made once at start: modules, classes and functions of the SDKs, DBOS,
SQLAlchemy, bolt and discord.py (100,000–300,000 objects). Each full pass walked them again, with the
GIL held: 130–160 ms on a loaded 2-core host, long enough to hold up every Slack ack in flight (the
ack is answered on a thread of its own, which still needs the GIL) and to show as a 200 ms tail.

`settle()`, called once a process has imported and built what it keeps, collects what start-up left
over and moves everything still alive to the permanent generation (`gc.freeze`): later passes skip it.
Reference counting still frees a frozen object that is no longer used; only a cycle among frozen
objects would stay, and start-up leaves none worth a pause (its garbage is collected first).

It then makes the young generation's passes rarer (`YOUNG_THRESHOLD`). CPython's default starts one every
700 new container objects, and a debate makes objects fast: a pydantic model, a dict and a few frames for
every event it reads or writes. Almost all of them are freed by reference counting long before a pass, but
what a pass finds alive is promoted and walked again by the middle generation. Measured over 100 debates
(600 model calls) after `settle()`, a worker made 198 young and 17 middle passes (145 ms of CPU with its one
full pass), a front 114 and 10 (49 ms); at 20,000 they made 6 and 2 young passes and no other (43 and 11 ms).
A young pass then walks at most 20,000 objects, ~7 ms, well inside an ack's budget.
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
