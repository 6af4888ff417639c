"""Files only the service's own user may read or write (mode 0600, whatever the umask): the log, the workflow
database, the lock beside the log, and the Slack installations' tokens. A umask can only narrow the mode
`os.open` asks for, so the mode is set again on the open descriptor."""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600


def create_private(path: Path | str, *, tighten: bool = False) -> None:
    """Create `path` with FILE_MODE unless it exists; with `tighten`, a file that exists is set to FILE_MODE
    too (for files that hold secrets: an old install's looser mode does not survive)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    except FileExistsError:
        if tighten:
            os.chmod(path, FILE_MODE)
        return
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
