"""How a process's log lines look: readable text by default, or one JSON object a line
(`DEBATE_LOG_FORMAT=json`) for a log collector: time, level, logger, message, the debate and workspace
the line is about, the process's role and name.

The debate a line is about comes from `about_debate`, set where a debate's work runs (the engine, a
thread's renderer), so a line logged anywhere below carries it without passing ids around. Every
line goes through the one redactor first: a key that reaches a log message, or an exception's text,
leaves as [redacted].
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

from orchestrator.safety import Redactor

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"

_about: ContextVar[tuple[str, str | None] | None] = ContextVar("debate_log_about", default=None)
_json_lines = False  # configure_logging chose json: a process's status lines are log lines too


def say(logger: logging.Logger, text: str) -> None:
    """A status line for the operator (`debate: listening…`): printed on stderr, or an INFO record in json."""
    if _json_lines:
        logger.info(text)
    else:
        print(f"debate: {text}", file=sys.stderr, flush=True)


@contextmanager
def about_debate(debate_id: str, workspace: str | None) -> Iterator[None]:
    """Log lines inside the block (and the tasks it starts) say which debate and workspace they are about."""
    token = _about.set((debate_id, workspace))
    try:
        yield
    finally:
        _about.reset(token)


def current_debate() -> str | None:
    """The debate the running code is about (`about_debate`), if any."""
    about = _about.get()
    return about[0] if about is not None else None


class _Context(logging.Filter):
    """Adds the debate, workspace, role and process name to every record, and redacts its text."""

    def __init__(self, role: str, process: str, redactor: Redactor) -> None:
        super().__init__()
        self.role, self.process, self.redactor = role, process, redactor

    def filter(self, record: logging.LogRecord) -> bool:
        about = _about.get()
        record.debate_id, record.workspace = about if about is not None else (None, None)
        record.role, record.process_name = self.role, self.process
        record.msg, record.args = self.redactor(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self.redactor(logging.Formatter().formatException(record.exc_info))
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "debate_id": getattr(record, "debate_id", None),
            "workspace": getattr(record, "workspace", None),
            "role": getattr(record, "role", None),
            "process": getattr(record, "process_name", None),
        }
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False)


def configure_logging(fmt: str, level: int, *, role: str, process: str, secrets: tuple[str, ...] = ()) -> None:
    """One stderr handler for the whole process in `fmt` ("text" or "json"), at `level`."""
    global _json_lines
    _json_lines = fmt == "json"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(_Context(role, process, Redactor(secrets)))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
