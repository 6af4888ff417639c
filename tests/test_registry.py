"""Model strings, the provider registry, plugins and effort budgets."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config import Settings
from orchestrator.providers import (
    AnthropicProvider,
    CLIToolProvider,
    Completion,
    DeltaCallback,
    Message,
    ModelCall,
    ModelStringError,
    OpenAICompatProvider,
    Price,
    ProviderNotConfiguredError,
    ProviderRegistry,
    ProviderSpec,
    UnknownProviderError,
    available_providers,
    budget,
    configured_providers,
    default_model_for,
    estimate_cost,
    family,
    is_cli_tool,
    parse_model,
    provider_spec,
    reasoning_effort,
    register,
    register_provider,
    unregister_provider,
)
from tests.fakes.llm_server import FakeLLMServer

PROVIDER_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
    "OLLAMA_BASE_URL",
    "VLLM_BASE_URL",
    "VLLM_API_KEY",
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)


def settings(**values: str) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_parse_model() -> None:
    assert parse_model("openai:gpt-5") == ("openai", "gpt-5")
    assert parse_model("cli:claude") == ("cli", "claude")
    assert parse_model(" Ollama:qwen3:32b ") == ("ollama", "qwen3:32b")
    assert parse_model("openrouter:anthropic/claude-sonnet-4.5") == ("openrouter", "anthropic/claude-sonnet-4.5")


@pytest.mark.parametrize("bad", ["gpt-5", "", ":gpt-5", "openai:", "openai:  "])
def test_malformed_model_strings(bad: str) -> None:
    with pytest.raises(ModelStringError, match=r"is not provider:model — e\.g\. anthropic:") as info:
        parse_model(bad)
    assert "\n" not in str(info.value)


def test_unknown_provider_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownProviderError) as info:
        parse_model("mistral:large")
    for name in ("anthropic", "openai", "gemini", "openrouter", "ollama", "vllm", "cli"):
        assert name in str(info.value)


def test_not_configured_names_the_variable() -> None:
    registry = ProviderRegistry(settings())
    with pytest.raises(ProviderNotConfiguredError) as info:
        registry.resolve("anthropic:claude-sonnet-4-6")
    assert str(info.value) == (
        "anthropic:claude-sonnet-4-6 needs ANTHROPIC_API_KEY — set it in the environment or .env"
    )
    for model, var in [("gemini:gemini-2.5-pro", "GEMINI_API_KEY"), ("ollama:qwen3", "OLLAMA_BASE_URL")]:
        with pytest.raises(ProviderNotConfiguredError, match=var):
            registry.resolve(model)


async def test_clients_are_created_once() -> None:
    registry = ProviderRegistry(
        settings(OPENAI_API_KEY="sk-o-123456", ANTHROPIC_API_KEY="sk-a-123456", OLLAMA_BASE_URL="http://h:11434")
    )
    first, model = registry.resolve("openai:gpt-5")
    second, other = registry.resolve("openai:gpt-5-mini")
    assert first is second and (model, other) == ("gpt-5", "gpt-5-mini")
    assert isinstance(first, OpenAICompatProvider)
    assert isinstance(registry.resolve("anthropic:claude-haiku-4-5")[0], AnthropicProvider)
    ollama, _ = registry.resolve("ollama:qwen3")
    assert isinstance(ollama, OpenAICompatProvider)
    assert str(ollama.client.base_url).rstrip("/") == "http://h:11434/v1"
    await registry.aclose()


def test_configured_from_settings() -> None:
    assert ProviderRegistry(settings()).configured() == []
    registry = ProviderRegistry(
        settings(ANTHROPIC_API_KEY="sk-a-123456", GEMINI_API_KEY="g-123456", VLLM_BASE_URL="http://gpu:8000/v1")
    )
    assert registry.configured() == ["anthropic", "gemini", "vllm"]
    assert ProviderRegistry(settings(OPENAI_BASE_URL="http://127.0.0.1:1/v1")).configured() == ["openai"]


def test_cli_tools_on_path(fake_cli_path: Path) -> None:
    registry = ProviderRegistry(settings())
    assert registry.configured_cli_tools() == ["cli:claude", "cli:gemini", "cli:codex", "cli:opencode", "cli:copilot"]
    provider, tool = registry.resolve("cli:codex")
    assert isinstance(provider, CLIToolProvider) and tool == "codex"
    with pytest.raises(ModelStringError, match="unknown CLI tool 'aider'; valid: cli:claude"):
        registry.resolve("cli:aider")


def test_cli_tool_missing_from_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("DEBATE_CLI_CLAUDE", raising=False)
    registry = ProviderRegistry(settings())
    assert registry.configured_cli_tools() == []
    with pytest.raises(ProviderNotConfiguredError, match="cli:claude needs the claude executable"):
        registry.resolve("cli:claude")


def test_default_models() -> None:
    registry = ProviderRegistry(settings())
    assert registry.default_model("openai") == "gpt-5"
    assert registry.default_model("gemini") == "gemini-2.5-pro"
    assert registry.default_model("openrouter") == "openai/gpt-5"
    assert registry.default_model("ollama") == "qwen3"
    assert registry.default_model("vllm") == "default"
    assert registry.default_model("anthropic", "low") == "claude-haiku-4-5"
    with pytest.raises(UnknownProviderError):
        registry.default_model("nope")


def test_families() -> None:
    assert provider_spec("anthropic").family == "Anthropic" and provider_spec("gemini").family == "Google"
    assert family("openai:gpt-5") == "OpenAI"
    assert family("openrouter:anthropic/claude-sonnet-4.5") == "Anthropic"
    assert family("ollama:qwen3") == "Qwen"
    assert family("ollama:llama3.3") == "Meta"
    assert family("cli:claude") == "Anthropic"
    assert family("cli:codex") == "OpenAI"
    assert family("cli:gemini") == "Google"
    assert family("vllm:default") == "Local (vLLM)"


class _EchoProvider:
    name = "echo"

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.closed = False

    async def complete(self, call: ModelCall, on_delta: DeltaCallback | None = None) -> Completion:
        text = f"{self.prefix}{call.messages[-1].content}"
        if on_delta is not None:
            await on_delta(text)
        return Completion(text=text)

    async def aclose(self) -> None:
        self.closed = True


async def test_plugins_register_through_the_same_door() -> None:
    made: list[Settings] = []

    def factory(s: Settings) -> _EchoProvider:
        made.append(s)
        return _EchoProvider("echo: ")

    register_provider("echo", factory, family="Echo")
    try:
        assert "echo" in available_providers()
        registry = ProviderRegistry(settings())
        provider, model = registry.resolve("echo:any")
        assert model == "any"
        assert registry.resolve("echo:other")[0] is provider and len(made) == 1
        assert "echo" in registry.configured()
        assert family("echo:any") == "Echo"
        with pytest.raises(ValueError, match="already registered"):
            register_provider("echo", factory)
        await registry.aclose()
        assert provider.closed  # type: ignore[attr-defined]
    finally:
        unregister_provider("echo")
    with pytest.raises(UnknownProviderError):
        parse_model("echo:any")


async def test_resolved_provider_talks_to_the_peer(llm_server: FakeLLMServer) -> None:
    registry = ProviderRegistry(settings(OPENAI_BASE_URL=llm_server.openai_base_url, DEBATE_MAX_RETRIES="0"))
    provider, model = registry.resolve("openai:local-model")
    result = await provider.complete(ModelCall(model=model, messages=(Message(role="user", content="hi"),)))
    assert result.text.startswith("As local-model")
    assert llm_server.requests[0].api_key == "not-needed"
    await registry.aclose()


def test_effort_budgets() -> None:
    assert [budget("anthropic", e) for e in ("low", "medium", "high", "max")] == [1024, 2048, 4096, 8192]
    assert budget("openai", "low") == 4096  # reasoning tokens count against the budget
    assert reasoning_effort("openai", "max") == "high"
    assert reasoning_effort("openai", "low", "gpt-4o") is None
    assert reasoning_effort("openai", "low", "o3-mini") == "low"
    assert reasoning_effort("anthropic", "high") is None
    with pytest.raises(ValueError, match="effort must be one of"):
        budget("openai", "extreme")


def test_default_model_per_effort_comes_from_the_spec() -> None:
    assert default_model_for("anthropic", "low") == "claude-haiku-4-5"
    assert default_model_for("anthropic", "max") == "claude-sonnet-4-6"
    assert default_model_for("openai", "low") == "gpt-5-mini"
    assert default_model_for("nope") is None


async def test_a_vendor_is_one_spec(llm_server: FakeLLMServer) -> None:
    """Everything about a new vendor in one ProviderSpec: the registry, seating and pricing all read it."""

    def factory(s: Settings) -> _EchoProvider:
        if not s.vllm_api_key:
            raise ProviderNotConfiguredError("VLLM_API_KEY")
        return _EchoProvider("acme: ")

    spec = ProviderSpec(
        name="acme", family="Acme", factory=factory, key_var="VLLM_API_KEY",
        is_configured=lambda s: bool(s.vllm_api_key), models={"medium": "roadrunner-2", "low": "roadrunner-mini"},
        budgets={"low": 100, "medium": 200, "high": 300, "max": 400},
        prices={"roadrunner-2": Price(input_per_mtok=2.0, output_per_mtok=4.0)},
    )
    register(spec)
    try:
        assert "acme" in available_providers() and family("acme:roadrunner-2") == "Acme"
        assert (budget("acme", "high"), default_model_for("acme", "low")) == (300, "roadrunner-mini")
        assert estimate_cost("acme:roadrunner-2-20250101", 10**6, 10**6) == 6.0
        assert estimate_cost("acme:unpriced", 1, 1) is None
        with pytest.raises(ProviderNotConfiguredError, match="acme:roadrunner-2 needs VLLM_API_KEY"):
            ProviderRegistry(settings()).resolve("acme:roadrunner-2")
        registry = ProviderRegistry(settings(VLLM_API_KEY="k-123456"))
        assert "acme" in registry.configured() and registry.default_model("acme") == "roadrunner-2"
        provider, _ = registry.resolve("acme:roadrunner-2")
        assert (await provider.complete(ModelCall(model="x", messages=(Message(role="user", content="hi"),)))).text \
            == "acme: hi"
        await registry.aclose()
    finally:
        unregister_provider("acme")
    assert estimate_cost("acme:roadrunner-2", 1, 1) is None


def test_questions_for_the_chat_policy(fake_cli_path: Path) -> None:
    assert configured_providers(settings()) == []
    assert configured_providers(settings(OPENAI_API_KEY="sk-o-123456", OLLAMA_BASE_URL="http://h:11434")) == [
        "openai", "ollama"]  # never `cli`: tools need no credentials and are operator-only
    for model in ("cli:claude", " CLI:codex/o3 ", "cli:anything"):
        assert is_cli_tool(model), model
    for model in ("openai:gpt-5", "claude", "", "nope:cli", "openrouter:cli/x"):
        assert not is_cli_tool(model), model
    assert provider_spec("cli").host_tool and not provider_spec("openai").host_tool


@pytest.mark.slow
def test_importing_the_providers_loads_no_sdk() -> None:
    """A chat interaction must be acked within 3 s: the SDKs load lazily (or in preload_sdks' thread)."""
    import subprocess
    import sys

    code = (
        "import sys, orchestrator.providers as p; p.ProviderRegistry; p.estimate_cost('openai:gpt-5', 1, 1);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'httpx2')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_checking_a_model_refuses_what_resolving_would_and_loads_no_sdk() -> None:
    """A front admits debates with `check`: the same refusals as `resolve`, and no client, so no SDK."""
    import subprocess
    import sys

    registry = ProviderRegistry(settings())
    missing = [("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY"), ("gemini:gemini-2.5-pro", "GEMINI_API_KEY")]
    for model, var in missing:
        with pytest.raises(ProviderNotConfiguredError, match=var):
            registry.check(model)
    with pytest.raises(ModelStringError):
        registry.check("anthropic")
    code = (
        "import sys; from orchestrator.config import Settings; from orchestrator.providers import ProviderRegistry;"
        "r = ProviderRegistry(Settings(_env_file=None, ANTHROPIC_API_KEY='sk-a-123456', OPENAI_API_KEY='sk-o-123456'));"
        "r.check('anthropic:claude-sonnet-4-6'); r.check('openai:gpt-5');"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_import_cycles_in_the_providers() -> None:
    """Every import counts (function-level and TYPE_CHECKING ones too); siblings never import the package."""
    import ast

    root = Path(__file__).parent.parent
    package = root / "orchestrator" / "providers"
    modules = {".".join(f.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): f
               for f in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                               for a in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(d == goal or (d not in seen and not seen.add(d) and reaches(d, goal, seen)) for d in graph[start])

    assert sorted(m for m in graph if reaches(m, m, set())) == []
