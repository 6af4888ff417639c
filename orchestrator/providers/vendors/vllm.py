"""vLLM (`vllm:model`), a self-hosted OpenAI-compatible server, through the `openai` SDK.

Settings: VLLM_BASE_URL (with its /v1), VLLM_API_KEY (default "EMPTY", as vLLM documents). Free: it
runs on your own hardware. The default model name is "default"; name the served model instead.
"""

from __future__ import annotations

from orchestrator.config import Settings
from orchestrator.providers.base import Provider
from orchestrator.providers.spec import Endpoint, ProviderSpec
from orchestrator.providers.vendors.openai import openai_backend


def _endpoint(settings: Settings) -> Endpoint:
    url = settings.vllm_base_url
    return Endpoint(url, (settings.vllm_api_key or "EMPTY") if url else None)


def _create(settings: Settings) -> Provider:
    return openai_backend().from_settings(SPEC, settings)


SPEC = ProviderSpec(
    name="vllm",
    family="Local (vLLM)",
    summary="a self-hosted vLLM server",
    factory=_create,
    key_var="VLLM_API_KEY",
    base_url_var="VLLM_BASE_URL",
    needs="VLLM_BASE_URL",
    is_configured=lambda s: bool(s.vllm_base_url),
    endpoint=_endpoint,
    models={"medium": "default"},
    free=True,
    hosts_many_families=True,
    preload=openai_backend,
    json_schema=True,  # enforced with a grammar; a server that refuses it is asked again without (openai_compat)
)
