"""The behaviour behind the fake `claude`, `gemini`, `codex`, `opencode` and `copilot` executables.

Each fake checks it was invoked the way the real tool is, reads the prompt where that tool reads it,
and prints that tool's output shape. Scripted through the environment:

    FAKE_CLI_REPLY    the reply text (default: "Fake <tool> answer.")
    FAKE_CLI_MODE     ok | fail (exit 3, a fake secret on stderr) | garbage (non-JSON) | hang (sleep forever)
    FAKE_CLI_ECHO=1   reply with the prompt's last non-empty line
    FAKE_CLI_PIDFILE  hang mode writes "<pid>\\n<child pid>\\n" here (the child shares the process group)
    FAKE_CLI_LOG      append {"tool", "argv", "prompt_chars", "cwd"} as one JSON line per run

The provider gives a tool a minimal environment, so these reach the fake only when the test passes
them (`CLIToolProvider(extra_env=...)`). One behaviour needs no variable at all, so that it works
through the registry exactly as configured in production: the model `report-env`
(`cli:<tool>/report-env`) replies with the environment the tool saw, as a JSON object.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

SECRET = "sk-SECRET123"


def _usage_error(tool: str, argv: list[str]) -> None:
    print(f"{tool}: unexpected arguments {argv!r}", file=sys.stderr)
    sys.exit(64)


def _prompt(tool: str, argv: list[str]) -> str:
    if tool == "claude" and argv[:3] == ["-p", "--output-format", "json"]:
        return sys.stdin.read()
    if tool == "gemini" and argv[:4] == ["-p", "", "--output-format", "json"]:
        return sys.stdin.read()
    if tool == "codex" and argv[:2] == ["exec", "--json"] and argv[-1] == "-":
        return sys.stdin.read()
    if tool == "opencode" and argv[:3] == ["run", "--format", "json"]:
        return sys.stdin.read()
    if tool == "copilot" and len(argv) >= 2 and argv[0] == "-p":
        return argv[1]
    _usage_error(tool, argv)
    return ""


def _model(argv: list[str]) -> str | None:
    for flag in ("--model", "-m"):
        if flag in argv[:-1]:
            return argv[argv.index(flag) + 1]
    return None


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _hang() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    pidfile = os.environ.get("FAKE_CLI_PIDFILE")
    if pidfile:
        with open(pidfile + ".tmp", "w") as fh:
            fh.write(f"{os.getpid()}\n{child.pid}\n")
        os.replace(pidfile + ".tmp", pidfile)
    while True:
        time.sleep(3600)


def main(tool: str) -> None:
    argv = sys.argv[1:]
    prompt = _prompt(tool, argv)
    log = os.environ.get("FAKE_CLI_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(json.dumps({"tool": tool, "argv": argv, "prompt_chars": len(prompt), "cwd": os.getcwd()}) + "\n")
    mode = os.environ.get("FAKE_CLI_MODE", "ok")
    if mode == "hang":
        _hang()
    if mode == "fail":
        print(f"Error: request failed (api key {SECRET} rejected)", file=sys.stderr)
        sys.exit(3)
    if mode == "garbage":
        print("Segmentation fault? {not json at all")
        return

    if _model(argv) == "report-env":
        reply = json.dumps(dict(os.environ), sort_keys=True)
    elif os.environ.get("FAKE_CLI_ECHO") == "1":
        lines = [line for line in prompt.splitlines() if line.strip()]
        reply = lines[-1] if lines else ""
    else:
        reply = os.environ.get("FAKE_CLI_REPLY", f"Fake {tool} answer.")
    tin, tout = _tokens(prompt), _tokens(reply)

    if tool == "claude":
        print(json.dumps({
            "type": "result", "subtype": "success", "is_error": False, "result": reply,
            "session_id": "fake", "total_cost_usd": 0.0,
            "usage": {"input_tokens": tin, "output_tokens": tout},
        }))
    elif tool == "gemini":
        print(json.dumps({
            "response": reply,
            "stats": {"models": {"gemini-2.5-pro": {"tokens": {"prompt": tin, "candidates": tout}}}},
        }, indent=2))
    elif tool == "codex":
        events = [
            {"type": "thread.started", "thread_id": "fake"},
            {"type": "turn.started"},
            {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "thinking"}},
            {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": reply}},
            {"type": "turn.completed", "usage": {"input_tokens": tin, "cached_input_tokens": 0, "output_tokens": tout}},
        ]
        for event in events:
            print(json.dumps(event))
    elif tool == "opencode":
        half = len(reply) // 2
        events = [
            {"type": "step_start", "part": {"type": "step-start"}},
            {"type": "text", "part": {"type": "text", "text": reply[:half]}},
            {"type": "text", "part": {"type": "text", "text": reply[half:]}},
            {"type": "step_finish", "part": {"type": "step-finish", "tokens": {"input": tin, "output": tout}}},
        ]
        for event in events:
            print(json.dumps(event))
    else:
        print(reply)
