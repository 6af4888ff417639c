"""Command-line coding agents as debaters: `cli:claude`, `cli:gemini`, `cli:codex`, `cli:opencode`, `cli:copilot`.

Each call runs the tool once as a subprocess (never through a shell), in a fresh empty working directory and its own
process group, bounded by `call.timeout_s` (on timeout or cancellation the whole group gets SIGKILL). The conversation
is flattened into one prompt with role headers and sent on stdin (copilot takes it as an argument, capped); the tool's
JSON output (copilot's plain text) is parsed by cli_output. `cli:<tool>/<model>` passes a model (`cli:claude/opus`);
DEBATE_CLI_<TOOL> names the executable (default: the tool's name on PATH). `TOOLS` holds each tool's arguments.

The tool's environment is minimal, never the bot's own: a chat user's topic becomes its prompt, so it must not find
the bot's Slack or Discord tokens, nor other vendors' keys. It gets the basics (`BASIC_VARS`: paths, locale, proxies,
CA bundles, where the tools keep their logins; TERM=dumb and NO_COLOR=1 for output we parse), its own vendor's key
from the settings when configured here, and its own configuration variables from the host when set. A non-zero exit
is reported by status only: stderr may hold tokens, so only the debug log sees it, redacted. Token counts the tool
does not report are estimated (about 4 characters a token).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from orchestrator.config import Settings
from orchestrator.providers.base import Completion, DeltaCallback, Message, ModelCall, ProviderError, ProviderTimeout
from orchestrator.providers.cli_output import (
    BadOutput,
    ParsedOutput,
    parse_claude,
    parse_codex,
    parse_copilot,
    parse_gemini,
    parse_opencode,
)
from orchestrator.providers.redact import estimate_tokens, redact, seconds
from orchestrator.providers.spec import family_from_name, setting

log = logging.getLogger(__name__)

MAX_OUTPUT_BYTES = 4 * 1024 * 1024
MAX_STDERR_BYTES = 64 * 1024
MAX_ARGV_PROMPT_BYTES = 100_000  # below Linux's 128 KiB limit on one argument
_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@\-]{0,99}$")
_HEADERS = {"system": "[System]", "user": "[User]", "assistant": "[Assistant]"}


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    name: str
    base_args: tuple[str, ...]
    model_flag: str
    parse: Callable[[str], ParsedOutput]
    prompt_in_argv: bool = False
    family: str | None = None  # None: from the `/model` part, else "CLI"
    vendor_vars: tuple[str, ...] = ()  # its own vendor's settings, passed when configured
    host_vars: tuple[str, ...] = ()  # its own configuration, passed from the host environment when set

    def family_of(self, model: str) -> str:
        return self.family or family_from_name(model) or "CLI"

    def env(self, settings: Settings | None, environ: Mapping[str, str]) -> dict[str, str]:
        """The variables this tool gets on top of the basics (see the module docstring)."""
        env = {name: environ[name] for name in self.host_vars if environ.get(name)}
        if settings is not None:
            env.update({name: value for name in self.vendor_vars if (value := setting(settings, name))})
        return env

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
    "claude": ToolSpec(
        name="claude", base_args=("-p", "--output-format", "json"), model_flag="--model", parse=parse_claude,
        family="Anthropic", vendor_vars=("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"), host_vars=("CLAUDE_CONFIG_DIR",),
    ),
    "gemini": ToolSpec(
        name="gemini", base_args=("-p", "", "--output-format", "json"), model_flag="-m", parse=parse_gemini,
        family="Google", vendor_vars=("GEMINI_API_KEY",),
        host_vars=("GEMINI_CLI_HOME", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"),
    ),
    "codex": ToolSpec(
        name="codex", base_args=("exec", "--json", "--skip-git-repo-check"), model_flag="-m", parse=parse_codex,
        family="OpenAI", vendor_vars=("OPENAI_API_KEY", "OPENAI_BASE_URL"), host_vars=("CODEX_HOME",),
    ),
    "opencode": ToolSpec(
        name="opencode", base_args=("run", "--format", "json"), model_flag="-m", parse=parse_opencode,
        host_vars=("OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR"),
    ),
    "copilot": ToolSpec(
        name="copilot", base_args=(), model_flag="--model", parse=parse_copilot, prompt_in_argv=True,
        host_vars=("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_HOME"),
    ),
}

BASIC_VARS: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
)
FIXED_VARS: Mapping[str, str] = {"TERM": "dumb", "NO_COLOR": "1"}


def basic_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables every tool gets: where things are, the locale, the network's proxy and CAs."""
    env = {name: environ[name] for name in BASIC_VARS if name in environ}
    env.update({name: value for name, value in environ.items() if name.startswith("LC_")})
    env.update(FIXED_VARS)
    return env


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
        settings: Settings | None = None,
        secrets: tuple[str, ...] | list[str] = (),
        extra_env: Mapping[str, str] | None = None,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        on_spawn: Callable[[int], None] | None = None,
    ) -> None:
        self._settings = settings  # where each tool's vendor key comes from; None: no vendor keys
        self._extra_env = dict(extra_env or {})  # given to every tool (the tests script the fake tools with it)
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
            env = self.environment(spec)
            out, err, status = await self._run(label, argv, None if spec.prompt_in_argv else prompt, workdir, env, call)
        if status != 0:
            if err:
                log.debug("%s stderr: %s", label, redact(err.decode(errors="replace"), self._secrets, limit=500))
            raise ProviderError(f"{label} exited with status {status}")
        try:
            parsed = spec.parse(out.decode(errors="replace"))
        except BadOutput as exc:
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

    def environment(self, spec: ToolSpec) -> dict[str, str]:
        """The whole environment `spec`'s tool runs with: the basics, then its own variables."""
        return basic_env(os.environ) | self._extra_env | spec.env(self._settings, os.environ)

    async def _run(
        self, label: str, argv: list[str], stdin_text: str | None, workdir: str, env: dict[str, str],
        call: ModelCall,
    ) -> tuple[bytes, bytes, int]:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin_text is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workdir,
            env=env,
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
