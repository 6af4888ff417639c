"""What a model call's step returns (`CallResult`), a debater's turn step (`TurnResult`), the run's counters
(`CallStats`), and how a call ends its turn (`closing_event`). Step results are recorded by a durable run and
replayed on resume: they are frozen pydantic models, and the counters are updated from them outside the step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from orchestrator.events import TurnCompleted, TurnFailed
from orchestrator.models import Turn
from orchestrator.providers.base import Completion
from orchestrator.safety import sanitize_metadata

CONFIG_ERROR = "config"  # CallResult.error_kind of a model string that does not resolve, or missing credentials


@dataclass
class CallStats:
    attempted: int = 0
    timed_out: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True  # False once any call used a model with no known price


class CallResult(BaseModel):
    """What one model call's step returns: the completion, or the error (raw: callers sanitize it)."""

    model_config = ConfigDict(frozen=True)

    started_at: float
    duration_ms: int
    completion: Completion | None = None
    error: str = ""
    error_kind: str = ""  # ProviderError.kind ("timeout", "auth", …), or CONFIG_ERROR
    spent: Completion | None = None  # a failed call's tokens (no text), when it streamed or reported any

    @property
    def used(self) -> Completion | None:
        """The tokens this call is counted for: the completion's, or what a failed call had used."""
        return self.completion or self.spent


class TurnResult(BaseModel):
    """What a debater's turn step returns: the call's result, and its closing event as delivered."""

    model_config = ConfigDict(frozen=True)

    call: CallResult
    event: TurnCompleted | TurnFailed



def closing_event(where: dict[str, Any], result: CallResult) -> TurnCompleted | TurnFailed:
    """How a debater's call ends its turn (`where`: the turn's debate, round, seat, role, kind and
    model): completed with the text, or failed with a user-safe error."""
    completion = result.completion
    if completion is None:
        spent = result.spent  # what it streamed before failing is paid for: its tokens are counted
        failed = Turn(**where, started_at=result.started_at, status="failed", error=sanitize_metadata(result.error),
                      duration_ms=result.duration_ms, input_tokens=spent.input_tokens if spent else 0,
                      output_tokens=spent.output_tokens if spent else 0,
                      tokens_estimated=spent.tokens_estimated if spent else False)
        return TurnFailed(debate_id=failed.debate_id, turn=failed)
    done = Turn(**where, started_at=result.started_at, text=completion.text, duration_ms=completion.duration_ms,
                input_tokens=completion.input_tokens, output_tokens=completion.output_tokens,
                tokens_estimated=completion.tokens_estimated)
    return TurnCompleted(debate_id=done.debate_id, turn=done)
