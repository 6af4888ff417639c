"""What a process counts, for `GET /metrics` (Prometheus text format): one registry a process.

Each role counts what it does itself: a worker its model calls, debates and recoveries; a front its platform writes,
acks and render backlog (`debate serve` both). Names follow Prometheus practice (a `debate_` prefix, base units,
`_total` on counters) and, for model calls, the OpenTelemetry GenAI semantic conventions. No label holds a user,
channel, workspace, topic or debate id: a multi-workspace install would make them unbounded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest

__all__ = ["CONTENT_TYPE_LATEST", "exposition", "provider_label"]

# gen_ai.client.operation.duration: the conventions' advisory boundaries, in seconds
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
# gen_ai.client.token.usage: powers of four, in tokens
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 3.0, 5.0)

MODEL = ("gen_ai_provider_name", "gen_ai_request_model", "gen_ai_operation_name")

# the conventions' well-known provider names where ours differ; the others keep their prefix (ollama, vllm…)
_PROVIDER_NAMES = {"gemini": "gcp.gemini"}

OPERATION_DURATION = Histogram(
    "gen_ai_client_operation_duration", "Duration of a model call (GenAI client operation)",
    [*MODEL, "error_type"], unit="seconds", buckets=DURATION_BUCKETS)
TOKEN_USAGE = Histogram(
    "gen_ai_client_token_usage", "Tokens used by one model call, by token type (input, output)",
    [*MODEL, "gen_ai_token_type"], buckets=TOKEN_BUCKETS)
FIRST_TOKEN = Histogram(
    "debate_model_time_to_first_token", "From the start of a model call to its first streamed text",
    MODEL, unit="seconds", buckets=DURATION_BUCKETS)
CALL_FAILURES = Counter(
    "debate_model_call_failures", "Model calls that failed, by kind (timeout, connection, auth, rate_limit…)",
    ["gen_ai_provider_name", "error_type"])
CALL_RETRIES = Counter(
    "debate_model_call_retries", "HTTP requests the provider SDKs sent again (429, 5xx, connection errors)",
    ["gen_ai_provider_name"])
COST = Counter(
    "debate_model_cost_usd", "Estimated cost of model calls, in US dollars, from each provider's prices",
    ["gen_ai_provider_name", "gen_ai_request_model"])
UNPRICED_CALLS = Counter(
    "debate_model_unpriced_calls", "Model calls whose model has no known price (their cost is not counted)",
    ["gen_ai_provider_name"])

DEBATES_STARTED = Counter("debate_debates_started", "Debates started in this process", ["platform", "format"])
DEBATES_FINISHED = Counter(
    "debate_debates_finished", "Debates that ended in this process, by final status (completed, failed, cancelled)",
    ["platform", "format", "status"])
DEBATES_RUNNING = Gauge("debate_debates_running", "Debates (or continuations) executing in this process now")
LOG_WRITE_FAILURES = Counter("debate_log_write_failures", "Writes of a debate event to the log that failed")
WORKFLOWS_RECOVERED = Counter(
    "debate_workflows_recovered", "Durable debate workflows this process resumed at start (left by a crash or kill)")

PLATFORM_WRITES = Counter(
    "debate_platform_writes", "Messages posted or edited on a chat platform, by API method and outcome "
    "(ok, rate_limited, error)", ["platform", "method", "outcome"])
COMMAND_ACK = Histogram(
    "debate_command_ack", "From a chat command's arrival to its acknowledgement",
    ["platform"], unit="seconds", buckets=ACK_BUCKETS)
RENDER_BACKLOG = Gauge("debate_render_backlog_events", "Debate events waiting to be rendered into threads here")


# ProviderError.kind values, and "connection": the series a dashboard reads exist at 0 from the start,
# so the first failure of a kind shows as an increase (a series that appears at 1 shows none)
ERROR_KINDS = ("timeout", "connection", "auth", "rate_limit", "bad_output", "error")


def prepare_model_metrics(providers: list[str]) -> None:
    """Start the failure and retry counters of every configured provider at 0 (see ERROR_KINDS)."""
    for provider in providers:
        name = provider_label(provider)
        CALL_RETRIES.labels(name)
        for kind in ERROR_KINDS:
            CALL_FAILURES.labels(name, kind)


def prepare_platform_metrics(platform: str, methods: tuple[str, ...]) -> None:
    """Start `platform`'s write counters of `methods` at 0, for every outcome."""
    for method in methods:
        for outcome in ("ok", "rate_limited", "error"):
            PLATFORM_WRITES.labels(platform, method, outcome)


OTHER_MODEL = "other"  # the `gen_ai_request_model` of a model nobody configured (a name a chat user typed)
_LABELLED: set[str] = set()  # the `provider:model` strings whose model is a label value of its own


def label_models(models: Iterable[str]) -> None:
    """Let `models` (`provider:model`: the operator's, the seating's defaults, the priced ones: a set
    bounded by the configuration and the code, never by what users type) label the model metrics."""
    _LABELLED.update(m.strip() for m in models if m and m.strip())


def provider_label(model_string: str) -> str:
    """The `gen_ai_provider_name` of `provider:model`."""
    provider = model_string.partition(":")[0]
    return _PROVIDER_NAMES.get(provider, provider)


def model_labels(model_string: str) -> tuple[str, str, str]:
    """The model labels of a call to `model_string`. `gen_ai_request_model` is bounded too: chat users type model
    names (`--vs`, `--judges`) when the operator allows a whole provider, so a model `label_models` did not let
    in is OTHER_MODEL."""
    provider, _, model = model_string.partition(":")
    name = (model or provider) if model_string.strip() in _LABELLED else OTHER_MODEL
    return provider_label(model_string), name, "chat"


def observe_call(model_string: str, seconds: float, *, error_kind: str = "", input_tokens: int = 0,
                 output_tokens: int = 0, cost_usd: float | None = None, first_token_s: float | None = None) -> None:
    """One model call as it ran: its duration, and its tokens and cost or the kind of its failure. Called
    where the call runs (inside its step), so a call replayed from a durable workflow's record is not counted
    twice, and one repeated after a kill is counted where it ran again."""
    labels = model_labels(model_string)
    OPERATION_DURATION.labels(*labels, error_kind).observe(seconds)
    if first_token_s is not None:
        FIRST_TOKEN.labels(*labels).observe(first_token_s)
    if error_kind:
        CALL_FAILURES.labels(labels[0], error_kind).inc()
        if not (input_tokens or output_tokens):  # a failed call that streamed text is counted as it is billed
            return
    TOKEN_USAGE.labels(*labels, "input").observe(input_tokens)
    TOKEN_USAGE.labels(*labels, "output").observe(output_tokens)
    if cost_usd is None:
        UNPRICED_CALLS.labels(labels[0]).inc()
    else:
        COST.labels(labels[0], labels[1]).inc(cost_usd)


_backlogs: list[Callable[[], int]] = []
RENDER_BACKLOG.set_function(lambda: sum(waiting() for waiting in _backlogs))


def count_backlog(waiting: Callable[[], int]) -> Callable[[], None]:
    """Add what `waiting()` says at each scrape to the render backlog; returns how to stop counting it."""
    _backlogs.append(waiting)
    return lambda: _backlogs.remove(waiting) if waiting in _backlogs else None


def exposition() -> bytes:
    """This process's metrics in the Prometheus text format."""
    return generate_latest(REGISTRY)
