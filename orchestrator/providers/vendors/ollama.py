"""Ollama (`ollama:model`), local models through Ollama's OpenAI-compatible API and the `openai` SDK.

Settings: OLLAMA_BASE_URL (`/v1` is appended to a bare root like http://localhost:11434); no key (the
SDK needs one, so it sends "ollama"). Free: it runs on your own hardware.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from orchestrator.config import Settings
from orchestrator.providers.base import Provider
from orchestrator.providers.spec import Endpoint, ProviderSpec
from orchestrator.providers.vendors.openai import openai_backend


def ollama_v1_url(url: str) -> str:
    """Ollama's OpenAI-compatible API lives under /v1; accept the bare root users usually set."""
    url = url.strip()
    if "://" not in url:
        url = f"http://{url}"
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return url.rstrip("/") + "/v1"
    return url


def _endpoint(settings: Settings) -> Endpoint:
    url = ollama_v1_url(settings.ollama_base_url) if settings.ollama_base_url else None
    return Endpoint(url, "ollama" if url else None)


def _create(settings: Settings) -> Provider:
    return openai_backend().from_settings(SPEC, settings)


SPEC = ProviderSpec(
    name="ollama",
    family="Local (Ollama)",
    summary="local models",
    factory=_create,
    base_url_var="OLLAMA_BASE_URL",
    setup_example="http://localhost:11434",
    is_configured=lambda s: bool(s.ollama_base_url),
    endpoint=_endpoint,
    models={"medium": "qwen3"},
    free=True,
    hosts_many_families=True,
    preload=openai_backend,
    json_schema=True,  # enforced with a grammar; a server that refuses it is asked again without (openai_compat)
)
