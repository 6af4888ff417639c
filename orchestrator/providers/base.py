"""The one Provider protocol every model backend implements, the data it takes and returns, and every
error a provider or the registry raises. Imports nothing else from this package."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.models import Effort

DeltaCallback = Callable[[str], Awaitable[None]]


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class AnswerSchema(BaseModel):
    """The JSON shape an answer must take: a provider with a structured-output mode enforces it in one
    call (OpenAI `json_schema` strict, Anthropic a forced tool); the others are sent no schema and the
    caller reads whatever shape comes back. `schema` is strict-mode JSON Schema: every object lists all
    of its properties as required and forbids others."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    json_schema: dict[str, Any]
    non_empty: tuple[str, ...] = ()  # top-level string properties an answer is unusable without (a grammar may insist)


class ModelCall(BaseModel):
    """One request to a model: `model` is the part after `provider:`; `answer_schema`, when set, the
    shape of JSON the answer must be (the text of the completion is then that JSON)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    messages: tuple[Message, ...]
    effort: Effort = "medium"
    max_tokens: int | None = None  # None: the effort's budget
    timeout_s: float = Field(default=240.0, gt=0)
    answer_schema: AnswerSchema | None = None
    read_every_s: float = Field(default=0.0, ge=0)  # the streamed answer read at most this often (0: as it lands)


class Completion(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    duration_ms: int = 0
    tokens_estimated: bool = False  # the server reported no usage: counted at about four characters a token
    cut: bool = False  # the model stopped at its output-token limit (finish_reason "length"), not by itself


class Provider(Protocol):
    """Streams text deltas for a list of messages, then reports tokens and duration.

    Cancelling the awaiting task cancels the call; `call.timeout_s` bounds it.
    """

    name: str

    async def complete(self, call: ModelCall, on_delta: DeltaCallback | None = None) -> Completion: ...

    async def aclose(self) -> None: ...


# ---- a call failed ----


class ProviderError(Exception):
    """A model call failed; `str(error)` is safe to show users (no secrets, no raw stderr)."""

    def __init__(self, message: str, *, kind: str = "error", input_tokens: int = 0, output_tokens: int = 0) -> None:
        super().__init__(message)
        self.kind = kind  # error, timeout, auth, rate_limit, bad_output, context
        # what the server reported using before the call failed (0: nothing reported)
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens


class ProviderTimeout(ProviderError):
    def __init__(self, message: str) -> None:
        super().__init__(message, kind="timeout")


# ---- a model string cannot be served (raised before any call) ----


class ModelStringError(ValueError):
    """A model string is not `provider:model`, or names a model its provider cannot run."""


class UnknownProviderError(ValueError):
    """The provider part of a model string names no registered provider."""


class ProviderNotConfiguredError(ValueError):
    """A provider's credentials, base URL or executable are missing. `variable` names what to set."""

    def __init__(self, variable: str, model: str | None = None, *, fix: str | None = None) -> None:
        self.variable = variable
        self.model = model
        self.fix = fix
        who = model or "this provider"
        super().__init__(f"{who} needs {variable} — {fix or 'set it in the environment or .env'}")
