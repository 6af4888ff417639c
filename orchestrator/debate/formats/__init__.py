"""The debate formats, by name. Each one is a round plan the engine runs."""

from __future__ import annotations

from orchestrator.debate.formats.base import DebateFormat, FormatResult
from orchestrator.debate.formats.challenge import ChallengeFormat
from orchestrator.debate.formats.consensus import ConsensusFormat
from orchestrator.debate.formats.council import CouncilFormat
from orchestrator.debate.formats.stances import StancesFormat

_FORMATS: dict[str, type] = {"challenge": ChallengeFormat, "consensus": ConsensusFormat, "stances": StancesFormat,
                             "council": CouncilFormat}


def register_format(name: str, cls: type) -> None:
    _FORMATS[name] = cls


def get_format(name: str) -> DebateFormat:
    try:
        return _FORMATS[name]()
    except KeyError:
        raise ValueError(f"unknown format {name!r}; choose one of {', '.join(sorted(_FORMATS))}") from None


__all__ = ["DebateFormat", "FormatResult", "get_format", "register_format"]
