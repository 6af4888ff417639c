"""Command-line coding agents as debaters: `cli:claude`, `cli:gemini`, `cli:codex`, `cli:opencode`, `cli:copilot`.

Each call runs the tool once as a subprocess (never through a shell), in a fresh empty working
directory, in its own process group. The conversation is flattened into one prompt with role headers
and sent on stdin (copilot takes it as an argument), and the tool's JSON output is parsed:

    claude    claude -p --output-format json              {"result", "usage": {"input_tokens", "output_tokens"}}
    gemini    gemini -p "" --output-format json           {"response", "stats": {"models": {…: {"tokens": …}}}}
    codex     codex exec --json --skip-git-repo-check -   JSON lines: item.completed agent_message, turn.completed
    opencode  opencode run --format json                  JSON lines: {"type": "text", "part": {"text"}}
    copilot   copilot -p PROMPT                           plain text (no JSON mode); prompt capped at 100,000 bytes

`cli:<tool>/<model>` passes a model to the tool (`--model`/`-m`), e.g. `cli:claude/opus`.

Environment:
    DEBATE_CLI_CLAUDE, DEBATE_CLI_GEMINI, DEBATE_CLI_CODEX, DEBATE_CLI_OPENCODE, DEBATE_CLI_COPILOT
        the executable to run for that tool (a path or a name looked up on PATH); default: the tool name.

A call is bounded by `call.timeout_s`: on timeout or cancellation the whole process group gets
SIGKILL. A non-zero exit is reported by status only; stderr may hold tokens, so it only reaches the
debug log, redacted. Token counts the tool does not report are estimated (about 4 characters a token).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.providers.base import Completion, DeltaCallback, Message, ModelCall, ProviderError, ProviderTimeout
from orchestrator.providers.redact import estimate_tokens, redact, seconds

log = logging.getLogger(__name__)

MAX_OUTPUT_BYTES = 4 * 1024 * 1024
MAX_STDERR_BYTES = 64 * 1024
MAX_ARGV_PROMPT_BYTES = 100_000  # below Linux's 128 KiB limit on one argument
_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@\-]{0,99}$")
_HEADERS = {"system": "[System]", "user": "[User]", "assistant": "[Assistant]"}


@dataclass(frozen=True, slots=True)
class ParsedOutput:
    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


class _BadOutput(Exception):
    """The tool's stdout is not the shape we expected; the message is safe (no output quoted)."""


def executable_for(tool: str) -> str:
    return os.environ.get(f"DEBATE_CLI_{tool.upper()}") or tool


def flatten(messages: tuple[Message, ...] | list[Message]) -> str:
    """One prompt text, each message under a role header, the latest request last."""
    return "\n\n".join(f"{_HEADERS[m.role]}\n{m.content.strip()}" for m in messages).strip() + "\n"


def cap_argv_prompt(prompt: str, limit: int = MAX_ARGV_PROMPT_BYTES) -> str:
    """Fit a prompt into one argv element: keep the start (instructions) and end (the ask)."""
    data = prompt.encode()
    if len(data) <= limit:
        return prompt
    marker = "\n\n[… earlier debate text omitted to fit the command line …]\n\n"
    keep = (limit - len(marker.encode())) // 2
    head = data[:keep].decode(errors="ignore")
    tail = data[-keep:].decode(errors="ignore")
    return head + marker + tail


def _json_document(out: str) -> Any:
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        pass
    # Some tools print a warning line before the JSON; take the last line that parses.
    for line in reversed(out.splitlines()):
        line = line.strip()
        if line.startswith(("{", "[")):
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(line)
    raise _BadOutput("output is not JSON")


def _json_lines(out: str) -> list[dict[str, Any]]:
    events = []
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(line)
            if isinstance(value, dict):
                events.append(value)
    if not events:
        raise _BadOutput("output has no JSON lines")
    return events


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_claude(out: str) -> ParsedOutput:
    doc = _json_document(out)
    if isinstance(doc, list):  # --verbose prints the whole event list; the result is the last "result"
        doc = next((e for e in reversed(doc) if isinstance(e, dict) and e.get("type") == "result"), None)
    if not isinstance(doc, dict) or not isinstance(doc.get("result"), str):
        raise _BadOutput("no \"result\" text in the JSON")
    if doc.get("is_error"):
        raise _BadOutput("the tool reported an error result")
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    inputs = [
        _int(usage.get(k)) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    ]
    input_tokens = sum(v for v in inputs if v) or None
    return ParsedOutput(doc["result"], input_tokens, _int(usage.get("output_tokens")))


def parse_gemini(out: str) -> ParsedOutput:
    doc = _json_document(out)
    if not isinstance(doc, dict):
        raise _BadOutput("the JSON is not an object")
    if doc.get("error") and not doc.get("response"):
        raise _BadOutput("the tool reported an error")
    if not isinstance(doc.get("response"), str):
        raise _BadOutput("no \"response\" text in the JSON")
    prompt = candidates = 0
    models = (doc.get("stats") or {}).get("models") or {}
    if isinstance(models, dict):
        for stats in models.values():
            tokens = stats.get("tokens") if isinstance(stats, dict) else None
            if isinstance(tokens, dict):
                prompt += _int(tokens.get("prompt")) or 0
                candidates += _int(tokens.get("candidates")) or 0
    return ParsedOutput(doc["response"], prompt or None, candidates or None)


def parse_codex(out: str) -> ParsedOutput:
    text: str | None = None
    input_tokens = output_tokens = None
    for event in _json_lines(out):
        kind = event.get("type")
        item = event.get("item")
        if kind == "item.completed" and isinstance(item, dict) and item.get("type") == "agent_message":
            if isinstance(item.get("text"), str):
                text = item["text"]
        elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
            input_tokens = _int(event["usage"].get("input_tokens"))
            output_tokens = _int(event["usage"].get("output_tokens"))
        elif kind in ("turn.failed", "error"):
            raise _BadOutput("the tool reported a failed turn")
    if text is None:
        raise _BadOutput("no agent_message in the JSON lines")
    return ParsedOutput(text, input_tokens, output_tokens)


def parse_opencode(out: str) -> ParsedOutput:
    parts: list[str] = []
    input_tokens = output_tokens = 0
    for event in _json_lines(out):
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        if event.get("type") == "text" and isinstance(part.get("text"), str):
            parts.append(part["text"])
        tokens = part.get("tokens")
        if isinstance(tokens, dict):
            input_tokens += _int(tokens.get("input")) or 0
            output_tokens += _int(tokens.get("output")) or 0
        if event.get("type") == "error":
            raise _BadOutput("the tool reported an error")
    if not parts:
        raise _BadOutput("no text parts in the JSON lines")
    return ParsedOutput("".join(parts), input_tokens or None, output_tokens or None)


def parse_copilot(out: str) -> ParsedOutput:
    return ParsedOutput(out.strip())


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    base_args: tuple[str, ...]
    model_flag: str
    parse: Callable[[str], ParsedOutput]
    prompt_in_argv: bool = False

    def argv(self, executable: str, prompt: str, model: str | None) -> list[str]:
        args = [executable, *self.base_args]
        if self.prompt_in_argv:
            args += ["-p", cap_argv_prompt(prompt)]
        if model:
            args += [self.model_flag, model]
        if self.name == "codex":
            args.append("-")  # codex exec reads the prompt from stdin when it is "-"
        return args


TOOLS: dict[str, ToolSpec] = {
    "claude": ToolSpec("claude", ("-p", "--output-format", "json"), "--model", parse_claude),
    "gemini": ToolSpec("gemini", ("-p", "", "--output-format", "json"), "-m", parse_gemini),
    "codex": ToolSpec("codex", ("exec", "--json", "--skip-git-repo-check"), "-m", parse_codex),
    "opencode": ToolSpec("opencode", ("run", "--format", "json"), "-m", parse_opencode),
    "copilot": ToolSpec("copilot", (), "--model", parse_copilot, prompt_in_argv=True),
}


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # start_new_session=True: the group id is the pid
    except ProcessLookupError:
        pass
    except PermissionError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


async def _read_capped(
    stream: asyncio.StreamReader | None, cap: int, on_overflow: Callable[[], None] | None
) -> tuple[bytes, bool]:
    """Read to EOF keeping at most `cap` bytes; past it, call `on_overflow` or drop the rest."""
    if stream is None:
        return b"", False
    buf = bytearray()
    overflow = False
    while chunk := await stream.read(65536):
        if overflow:
            continue
        if len(buf) + len(chunk) > cap:
            buf.extend(chunk[: cap - len(buf)])
            overflow = True
            if on_overflow is not None:
                on_overflow()
                break
        else:
            buf.extend(chunk)
    return bytes(buf), overflow


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    if proc.stdin is None:
        return
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the tool stopped reading:
            proc.stdin.write(data)  # its exit status says what happened
            await proc.stdin.drain()
    finally:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()


class CLIToolProvider:
    """Runs `cli:<tool>` calls; `call.model` is `<tool>` or `<tool>/<model>`."""

    name = "cli"

    def __init__(
        self,
        *,
        secrets: tuple[str, ...] | list[str] = (),
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        on_spawn: Callable[[int], None] | None = None,
    ) -> None:
        self._secrets = tuple(secrets)
        self._max_output = max_output_bytes
        self._on_spawn = on_spawn  # called with each subprocess's pid, e.g. to track what is running
        self.last_pid: int | None = None

    async def complete(self, call: ModelCall, on_delta: DeltaCallback | None = None) -> Completion:
        tool, _, model = call.model.partition("/")
        label = f"cli:{tool}"
        spec = TOOLS.get(tool)
        if spec is None:
            raise ProviderError(f"unknown CLI tool {tool!r}; valid: {', '.join(f'cli:{t}' for t in TOOLS)}")
        if model and not _MODEL.match(model):
            raise ProviderError(f"{label}: model name {model[:40]!r} is not valid")
        wanted = executable_for(tool)
        executable = shutil.which(wanted)
        if executable is None:
            raise ProviderError(
                f"{label}: executable {wanted!r} not found — install it or set DEBATE_CLI_{tool.upper()}"
            )
        prompt = flatten(call.messages)
        argv = spec.argv(executable, prompt, model or None)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="debate-cli-") as workdir:
            out, err, status = await self._run(label, argv, None if spec.prompt_in_argv else prompt, workdir, call)
        if status != 0:
            if err:
                log.debug("%s stderr: %s", label, redact(err.decode(errors="replace"), self._secrets, limit=500))
            raise ProviderError(f"{label} exited with status {status}")
        try:
            parsed = spec.parse(out.decode(errors="replace"))
        except _BadOutput as exc:
            log.debug("%s: unparseable output (%d bytes): %s", label, len(out), exc)
            raise ProviderError(f"{label} returned output we could not read: {exc}", kind="bad_output") from None
        text = parsed.text.strip()
        if not text:
            raise ProviderError(f"{label} returned no text", kind="bad_output")
        if on_delta is not None:
            await on_delta(text)
        return Completion(
            text=text,
            input_tokens=parsed.input_tokens or estimate_tokens(prompt),
            output_tokens=parsed.output_tokens or estimate_tokens(text),
            duration_ms=int((time.perf_counter() - started) * 1000),
        )

    async def _run(
        self, label: str, argv: list[str], stdin_text: str | None, workdir: str, call: ModelCall
    ) -> tuple[bytes, bytes, int]:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin_text is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workdir,
            start_new_session=True,
        )
        self.last_pid = proc.pid
        if self._on_spawn is not None:
            self._on_spawn(proc.pid)
        try:
            async with asyncio.timeout(call.timeout_s) as deadline:
                (out, too_big), (err, _), _ = await asyncio.gather(
                    _read_capped(proc.stdout, self._max_output, lambda: _kill_group(proc)),
                    _read_capped(proc.stderr, MAX_STDERR_BYTES, None),
                    _feed(proc, stdin_text.encode() if stdin_text is not None else b""),
                )
                status = await proc.wait()
        except TimeoutError:
            _kill_group(proc)
            await _reap(proc)
            if deadline.expired():
                raise ProviderTimeout(f"{label} timed out after {seconds(call.timeout_s)} s") from None
            raise
        except BaseException:
            _kill_group(proc)
            await _reap(proc)
            raise
        if too_big:
            raise ProviderError(
                f"{label} wrote more than {self._max_output // (1024 * 1024)} MB of output", kind="bad_output"
            )
        return out, err, status


async def _reap(proc: asyncio.subprocess.Process) -> None:
    # Shielded so a second cancellation cannot leave the killed process unreaped.
    with contextlib.suppress(TimeoutError, ProcessLookupError):
        await asyncio.wait_for(asyncio.shield(proc.wait()), 5)
