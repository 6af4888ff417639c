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
"""

from __future__ import annotations

import gc


def settle() -> int:
    """Collect start-up's garbage, then freeze what is left; the number of objects frozen in all."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
